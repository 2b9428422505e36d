// Package httpstop stops an http.Server without waiting on connections
// that asked nothing.
//
// Terms:
//
//   - silent connection: one the server accepted on which no request has
//     arrived yet (http.StateNew). Go's HTTP clients leave such
//     connections behind: a connection dialed for a request that another
//     connection served first goes to the client's idle pool unused.
//   - Shutdown's wait: http.Server.Shutdown closes the listener and the
//     idle connections and waits for the active ones, and it counts a
//     silent connection as active for its first 5 s, in case a request is
//     on its way. A server stopped with one open so took 5 s to stop.
//
// A Tracker is the server's ConnState hook; Shutdown closes the silent
// connections it knows of, at once and again every 50 ms while
// http.Server.Shutdown waits for the requests being served (a connection
// accepted just before the listener closed). A request racing onto a
// connection as it is closed fails as it would a moment later, when the
// server is gone.
//
// Caveat: HTTP/1 only. net/http runs no ConnState hook when an HTTP/2
// connection leaves StateNew, so a Tracker would take it for silent and
// Shutdown would cut its requests. cairn's servers offer no HTTP/2: their
// TLS configurations name no NextProtos, so ALPN never picks "h2".
//
// Usage sketch:
//
//	var tr httpstop.Tracker
//	srv := &http.Server{Handler: h, ConnState: tr.ConnState}
//	go srv.Serve(ln)
//	…
//	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//	defer cancel()
//	err := httpstop.Shutdown(ctx, srv, &tr) // by ctx, then every connection closed
package httpstop
