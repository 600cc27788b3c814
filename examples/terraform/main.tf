# A tenant with a robot user and its token, and the static-site example
# deployed for it. Run it against `make run` with a local build of the
# provider (docs/terraform/index.md, "Using a local build"):
#
#   export CAIRN_ENDPOINT=http://127.0.0.1:8080 CAIRN_TOKEN=cairn_...
#   terraform apply -var dns_token=... -var site_root=/srv/sites
#
# then change `title` and plan again: the service is updated in place.

terraform {
  required_providers {
    cairn = { source = "terraform.local/cairn/cairn" }
  }
}

provider "cairn" {}

variable "dns_token" {
  type      = string
  sensitive = true
}

variable "site_root" {
  type = string
}

variable "title" {
  type    = string
  default = "Welcome"
}

resource "cairn_template" "static_site" {
  descriptor = file("${path.module}/../static-site/service.yaml")
}

resource "cairn_tenant" "acme" {
  id   = "acme"
  name = "Acme"
}

resource "cairn_user" "deployer" {
  name      = "deploy robot"
  role      = "TENANT_ADMIN"
  tenant_id = cairn_tenant.acme.id
}

resource "cairn_api_token" "deployer" {
  user_id = cairn_user.deployer.id
}

resource "cairn_service" "site" {
  name      = "my-site"
  tenant_id = cairn_tenant.acme.id
  template  = cairn_template.static_site.name
  version   = cairn_template.static_site.version
  variables = {
    hostname = "www"
    root     = var.site_root
    title    = var.title
  }
  sensitive_variables = { dns_token = var.dns_token }
}

output "url" {
  value = cairn_service.site.outputs["url"]
}

output "deployer_token" {
  value     = cairn_api_token.deployer.token
  sensitive = true
}
