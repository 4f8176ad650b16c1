package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/switchboard-bot/switchboard/config"
)

// healthcheckTimeout bounds one check when -timeout is not given; below Docker's default
// HEALTHCHECK timeout (30 s) and the Dockerfile's, so the reason is ours, not a kill.
const healthcheckTimeout = 5 * time.Second

// healthcheck is `bot healthcheck [-addr HOST:PORT] [-c FILE] [-timeout D]`: it asks the /healthz
// of a `bot run` on this machine and exits 0 when it answers 200, 1 otherwise with a one-line
// reason on stderr. It is the container's HEALTHCHECK, so the image needs no shell or curl.
//
// The address is -addr, or else http.addr as `bot run` would read it (the -c file or BOT_CONFIG,
// then BOT_HTTP__ADDR). A host that listens on every interface (":8080", "0.0.0.0:8080") is asked
// at 127.0.0.1. Every failure exits 1, even a bad flag: Docker reserves exit code 2. Nothing it
// prints holds a secret: configuration errors never quote one, and the answer's body is not
// shown.
func healthcheck(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bot healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "host:port of the HTTP listener; http.addr from the configuration when empty")
	cfgPath := fs.String("c", "", "configuration file (YAML); BOT_CONFIG when empty")
	timeout := fs.Duration("timeout", healthcheckTimeout, "give up after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 1
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintln(stderr, "bot healthcheck: "+oneLine(fmt.Sprintf(format, a...)))
		return 1
	}
	if fs.NArg() > 0 {
		return fail("unexpected argument %q", fs.Arg(0))
	}
	if *addr == "" {
		cfg, err := config.Load(*cfgPath, environ)
		if err != nil {
			return fail("configuration: %v", err)
		}
		*addr = cfg.HTTP.Addr
	}
	target, err := healthzURL(*addr)
	if err != nil {
		return fail("%v", err)
	}

	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fail("%s: %v", target, err)
	}
	client := &http.Client{
		// Straight to the listener: no proxy from the environment, no redirects.
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fail("%s: no answer within %s", target, *timeout)
		}
		return fail("%s: %v", target, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail("%s: %s, want 200 OK", target, resp.Status)
	}
	fmt.Fprintf(stdout, "bot healthcheck: %s: %s\n", target, resp.Status)
	return 0
}

// healthzURL is the /healthz URL of the listener at addr (net.Listen's form, like ":8080").
func healthzURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("http.addr %q is not host:port", addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		// Listening on every interface: ask over loopback.
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}

// oneLine folds a possibly multi-line message (a list of configuration problems) into one line.
func oneLine(s string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if i > 0 {
			if strings.HasSuffix(b.String(), ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(strings.TrimSpace(line))
	}
	return b.String()
}
