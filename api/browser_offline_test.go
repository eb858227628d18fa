package api

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserOffline: when the server goes away the page says so in a
// banner, and when it comes back on the same address the page reconnects
// by itself and the banner goes.
func TestBrowserOffline(t *testing.T) {
	t.Parallel() // its own harness and Chromium; no timing or heap assertion
	br := chromium.Start(t, 1000, 900, 2*time.Minute)
	h := newHarness(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{Handler: h.srv}
	go srv.Serve(ln)
	br.Do("open",
		chromedp.Navigate("http://"+addr+"/"),
		chromedp.WaitVisible(chromedp.ID("key-input")),
		chromedp.SendKeys(chromedp.ID("key-input"), keyAlice),
		chromedp.Click(chromedp.ID("key-save")),
		chromedp.WaitReady(chromedp.CSS(`body[data-ready="true"]`)),
		chromedp.Click(chromedp.ID("welcome-close")),
	)
	srv.Close()
	br.Do("act while the server is away", chromedp.Click(chromedp.ID("sessions-button")))
	br.Poll("offline banner", `!document.getElementById('offline-banner').hidden && document.body.dataset.online === 'false'`)
	br.Do("close the dialog", chromedp.Click(chromedp.ID("sessions-close")))

	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	srv2 := &http.Server{Handler: h.srv}
	go srv2.Serve(ln2)
	defer srv2.Close()
	br.Poll("reconnected", `document.body.dataset.online === 'true'`)
	br.Poll("banner gone", `document.getElementById('offline-banner').hidden`)
	if errs := br.JSErrors(); len(errs) > 0 {
		t.Fatalf("JavaScript errors: %v", errs)
	}
}
