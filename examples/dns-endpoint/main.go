// Command dns-endpoint is a toy DNS service for the http plugin: it keeps
// records in memory and answers the plugin's signed calls, so the
// static-site example can be deployed without a real DNS provider. It shows
// what an endpoint must do: verify the signature, answer every call
// idempotently by resource id, and give outputs as {"outputs": {…}}.
//
//	go run ./examples/dns-endpoint -listen 127.0.0.1:9053 -secret-file dns.secret
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	httpplugin "cairn/plugins/http"
)

type record struct {
	FQDN   string `json:"fqdn"`
	Type   string `json:"type"`
	Target string `json:"target"`
	TTL    int    `json:"ttl"`
}

type server struct {
	secret  []byte
	mu      sync.Mutex
	records map[string]record // by resource id
}

// call is the body the http plugin sends.
type call struct {
	Operation  string `json:"operation"`
	ResourceID string `json:"resourceId"`
	Type       string `json:"type"`
	Properties struct {
		Zone   string `json:"zone"`
		Name   string `json:"name"`
		Type   string `json:"type"`
		Target string `json:"target"`
		TTL    int    `json:"ttl"`
		Token  string `json:"token"`
	} `json:"properties"`
}

const schema = `{"type":"object","additionalProperties":false,"required":["zone","name","type","target"],
 "properties":{"zone":{"type":"string"},"name":{"type":"string"},"type":{"enum":["A","AAAA","CNAME","TXT"]},
 "target":{"type":"string"},"ttl":{"type":"integer","minimum":30},"token":{"type":"string"}}}`

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := httpplugin.VerifyRequest(s.secret, r, time.Now())
	if err != nil {
		reply(w, http.StatusUnauthorized, map[string]string{"error": err.Error()})
		return
	}
	var c call
	if err := json.Unmarshal(body, &c); err != nil {
		reply(w, http.StatusBadRequest, map[string]string{"error": "body is not JSON: " + err.Error()})
		return
	}
	if c.Operation == httpplugin.OpDescribe {
		reply(w, http.StatusOK, map[string]any{"types": []map[string]any{{"name": "dns-record", "schema": json.RawMessage(schema)}}})
		return
	}
	if c.Type != "dns-record" {
		reply(w, http.StatusUnprocessableEntity, map[string]string{"error": fmt.Sprintf("unknown resource type %q", c.Type)})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c.Operation {
	case "create":
		p := c.Properties
		rec := record{FQDN: strings.TrimSuffix(p.Name, ".") + "." + p.Zone, Type: p.Type, Target: p.Target, TTL: p.TTL}
		s.records[c.ResourceID] = rec // the same id again just rewrites it
		log.Printf("record %s %s %s", rec.FQDN, rec.Type, rec.Target)
		reply(w, http.StatusOK, map[string]any{"outputs": rec})
	case "start", "stop", "observe":
		rec, ok := s.records[c.ResourceID]
		if !ok {
			reply(w, http.StatusNotFound, map[string]string{"error": "no record for resource " + c.ResourceID})
			return
		}
		reply(w, http.StatusOK, map[string]any{"outputs": rec})
	case "destroy":
		delete(s.records, c.ResourceID) // gone already is fine
		reply(w, http.StatusOK, map[string]any{})
	default:
		reply(w, http.StatusBadRequest, map[string]string{"error": "unknown operation " + c.Operation})
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9053", "address to listen on")
	secretFile := flag.String("secret-file", "", "file holding the secret shared with Cairn's http plugin")
	flag.Parse()
	secret, err := os.ReadFile(*secretFile)
	if err != nil {
		log.Fatalf("read the secret: %v (give -secret-file)", err)
	}
	s := &server{secret: []byte(strings.TrimSpace(string(secret))), records: map[string]record{}}
	log.Printf("DNS endpoint on http://%s", *listen)
	srv := &http.Server{Addr: *listen, Handler: s, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
