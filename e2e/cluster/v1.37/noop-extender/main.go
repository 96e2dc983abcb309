// Command noop-extender is the protocol's floor for throughput comparisons:
// a kube-scheduler extender that answers every filter with all candidate
// nodes feasible and every prioritize with score 0, over the same TLS with
// client certificates kube-arbiter requires. Only the standard library, so
// it measures the protocol and not a decision.
//
//	noop-extender -listen 127.0.0.1:PORT -cert tls.crt -key tls.key -client-ca ca.crt
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"log"
	"net/http"
	"os"
)

// args holds the ExtenderArgs fields the answers need; Go's JSON decoder
// matches keys case-insensitively, as kube-scheduler's does.
type args struct {
	Nodes *struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	} `json:"Nodes"`
	NodeNames *[]string `json:"NodeNames"`
}

func (a *args) names() []string {
	if a.NodeNames != nil {
		return *a.NodeNames
	}
	var names []string
	if a.Nodes != nil {
		for _, n := range a.Nodes.Items {
			names = append(names, n.Metadata.Name)
		}
	}
	return names
}

type filterResult struct {
	Nodes                      json.RawMessage   `json:"Nodes"`
	NodeNames                  *[]string         `json:"NodeNames"`
	FailedNodes                map[string]string `json:"FailedNodes"`
	FailedAndUnresolvableNodes map[string]string `json:"FailedAndUnresolvableNodes"`
	Error                      string            `json:"Error"`
}

type hostPriority struct {
	Host  string `json:"Host"`
	Score int64  `json:"Score"`
}

func decode(w http.ResponseWriter, r *http.Request) (*args, bool) {
	var a args
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return &a, true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Printf("answer: %v", err)
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8444", "address to serve HTTPS on")
	cert := flag.String("cert", "", "serving certificate (PEM)")
	key := flag.String("key", "", "serving key (PEM)")
	clientCA := flag.String("client-ca", "", "CA that client certificates must chain to (PEM)")
	flag.Parse()

	pool := x509.NewCertPool()
	pem, err := os.ReadFile(*clientCA)
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		log.Fatalf("client CA %q: %v", *clientCA, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /scheduler/filter", func(w http.ResponseWriter, r *http.Request) {
		if a, ok := decode(w, r); ok {
			result := filterResult{FailedNodes: map[string]string{}, FailedAndUnresolvableNodes: map[string]string{}}
			if a.NodeNames != nil {
				result.NodeNames = a.NodeNames
			} else {
				nodes, _ := json.Marshal(a.Nodes)
				result.Nodes = nodes
			}
			reply(w, result)
		}
	})
	mux.HandleFunc("POST /scheduler/prioritize", func(w http.ResponseWriter, r *http.Request) {
		if a, ok := decode(w, r); ok {
			names := a.names()
			scores := make([]hostPriority, len(names))
			for i, n := range names {
				scores[i] = hostPriority{Host: n}
			}
			reply(w, scores)
		}
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok"))
	})
	server := &http.Server{
		Addr:    *listen,
		Handler: mux,
		TLSConfig: &tls.Config{
			ClientCAs:  pool,
			ClientAuth: tls.RequireAndVerifyClientCert,
			MinVersion: tls.VersionTLS12,
		},
	}
	log.Printf("listening on https://%s", *listen)
	log.Fatal(server.ListenAndServeTLS(*cert, *key))
}
