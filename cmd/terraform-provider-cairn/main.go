// Command terraform-provider-cairn is Cairn's Terraform provider. Terraform
// starts it; see docs/terraform/index.md for using a local build.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"cairn/tfprovider"
)

// version is set at build time.
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run with support for debuggers such as delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), tfprovider.New(version), providerserver.ServeOpts{
		Address: tfprovider.Address,
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}
