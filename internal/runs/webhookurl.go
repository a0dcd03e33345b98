package runs

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"agentserver/internal/errdefs"
)

// WebhookPolicy says where webhooks may go.
type WebhookPolicy struct {
	// AllowPrivate lets webhooks go to loopback, private (RFC 1918, ULA),
	// link-local, CGNAT and unspecified addresses. Off, a run whose
	// webhook names such an address (or localhost) is refused at creation,
	// and a webhook whose host resolves to one is not sent.
	AllowPrivate bool
	// RequireHTTPS refuses http:// webhook URLs.
	RequireHTTPS bool
}

// check refuses a webhook URL the policy does not allow, with a message
// that says why (errdefs.ErrInvalid: 422).
func (p WebhookPolicy) check(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook must be an absolute http(s) URL: %w", errdefs.ErrInvalid)
	}
	if p.RequireHTTPS && u.Scheme != "https" {
		return fmt.Errorf("webhook must be an https URL on this server: %w", errdefs.ErrInvalid)
	}
	if p.AllowPrivate {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return fmt.Errorf("webhook host %q is a loopback name; this server sends webhooks to public addresses only (webhooks.url.allow_private in langgraph.json): %w", host, errdefs.ErrInvalid)
	}
	if ip, err := netip.ParseAddr(host); err == nil && privateAddr(ip) {
		return fmt.Errorf("webhook address %s is loopback, private or link-local; this server sends webhooks to public addresses only (webhooks.url.allow_private in langgraph.json): %w", ip, errdefs.ErrInvalid)
	}
	return nil
}

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// privateAddr reports whether ip is not a public unicast address.
func privateAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || cgnat.Contains(ip)
}

// errPrivateWebhook refuses a connection a webhook's name resolved to a
// private address for.
var errPrivateWebhook = fmt.Errorf("webhook host resolves to a loopback, private or link-local address")

// dialPublic is a net.Dialer Control that refuses private addresses: the
// name of a webhook that passed check at creation may resolve to one
// later (DNS rebinding).
func dialPublic(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || privateAddr(ap.Addr()) {
		return errPrivateWebhook
	}
	return nil
}

// publicWebhookTransport is an HTTP transport whose connections reach
// public addresses only.
func publicWebhookTransport() *http.Transport {
	d := &net.Dialer{Control: dialPublic}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return t
}

// CheckWebhook refuses a webhook URL the server's policy does not allow,
// for what stores one to use later (crons).
func (s *Service) CheckWebhook(raw string) error { return s.opts.Webhooks.check(raw) }
