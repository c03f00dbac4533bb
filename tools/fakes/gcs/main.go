// Command gcs serves an in-memory Google Cloud Storage on 127.0.0.1 for the tests: the library of
// fake-gcs-server (github.com/fsouza/fake-gcs-server/fakestorage) behind one shim. Its batch endpoint
// skips every part without a Content-ID, and the Python client (google-cloud-storage, which Beam's
// gs:// file system uses for its copies and deletes) sends none: the shim numbers them.
//
//	gcs [-port N]    prints its address (http://127.0.0.1:PORT) on one line, then serves until killed
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strings"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

func main() {
	port := flag.Int("port", 0, "the port to listen on (0: a free one)")
	flag.Parse()
	listener, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		log.Fatal(err)
	}
	url := "http://" + listener.Addr().String()
	server, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", ExternalURL: url, PublicHost: listener.Addr().String(),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stdout, url)
	log.Fatal(http.Serve(listener, numberBatchParts(server.HTTPHandler())))
}

// numberBatchParts gives each part of a batch request that has none a Content-ID, in order.
func numberBatchParts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/batch/") {
			next.ServeHTTP(w, r)
			return
		}
		_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || params["boundary"] == "" {
			http.Error(w, "a batch is multipart/mixed with a boundary", http.StatusBadRequest)
			return
		}
		reader := multipart.NewReader(r.Body, params["boundary"])
		var body bytes.Buffer
		writer := multipart.NewWriter(&body)
		for i := 0; ; i++ {
			part, err := reader.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			header := textproto.MIMEHeader{}
			for key, values := range part.Header {
				header[key] = values
			}
			if header.Get("Content-ID") == "" {
				header.Set("Content-ID", fmt.Sprintf("<part-%d>", i))
			}
			out, err := writer.CreatePart(header)
			if err == nil {
				_, err = io.Copy(out, part)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		writer.Close()
		r.Body = io.NopCloser(&body)
		r.ContentLength = int64(body.Len())
		r.Header.Set("Content-Type", "multipart/mixed; boundary="+writer.Boundary())
		next.ServeHTTP(w, r)
	})
}
