package tlsconf

// ssl.enabled.protocols, ssl.protocol and ssl.cipher.suites in Go's terms.
//
// Go offers a contiguous range of versions, so the enabled protocols become
// [lowest, highest] of the list, capped by ssl.protocol (TLSv1.2 caps at
// 1.2; TLS and TLSv1.3 at 1.3, as Java's SSLContext of those names).
// Cipher suites are named as Java names them, which is IANA's name; Java's
// "SSL_" prefix of old suites is read as "TLS_". TLS 1.3 suites are
// accepted but not configurable: Go always offers all three.

import (
	"crypto/tls"
	"fmt"
	"strings"
)

var versionByName = map[string]uint16{
	"TLSV1": tls.VersionTLS10, "TLSV1.1": tls.VersionTLS11,
	"TLSV1.2": tls.VersionTLS12, "TLSV1.3": tls.VersionTLS13,
}

// versions returns the min and max TLS versions of s.
func (s Settings) versions() (lo, hi uint16, err error) {
	enabled := s.EnabledProtocols
	if strings.TrimSpace(enabled) == "" {
		enabled = "TLSv1.2,TLSv1.3"
	}
	for name := range strings.SplitSeq(enabled, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		v, ok := versionByName[strings.ToUpper(name)]
		if !ok {
			return 0, 0, fmt.Errorf("%w: ssl.enabled.protocols: unsupported protocol %q (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", ErrConfig, name)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	if lo == 0 {
		return 0, 0, fmt.Errorf("%w: ssl.enabled.protocols=%q names no protocol", ErrConfig, s.EnabledProtocols)
	}
	limit := uint16(tls.VersionTLS13)
	switch p := strings.ToUpper(strings.TrimSpace(s.Protocol)); p {
	case "", "TLS", "TLSV1.3":
	default:
		v, ok := versionByName[p]
		if !ok {
			return 0, 0, fmt.Errorf("%w: ssl.protocol=%q: want TLS, TLSv1.2 or TLSv1.3", ErrConfig, s.Protocol)
		}
		limit = v
	}
	hi = min(hi, limit)
	if hi < lo {
		return 0, 0, fmt.Errorf("%w: ssl.protocol=%s is below every ssl.enabled.protocols version", ErrConfig, s.Protocol)
	}
	return lo, hi, nil
}

// cipherSuites returns the IDs of ssl.cipher.suites; nil is Go's default.
func (s Settings) cipherSuites() ([]uint16, error) {
	if strings.TrimSpace(s.CipherSuites) == "" {
		return nil, nil
	}
	byName := map[string]uint16{}
	tls13 := map[string]bool{}
	for _, list := range [][]*tls.CipherSuite{tls.CipherSuites(), tls.InsecureCipherSuites()} {
		for _, c := range list {
			byName[c.Name] = c.ID
			if len(c.SupportedVersions) == 1 && c.SupportedVersions[0] == tls.VersionTLS13 {
				tls13[c.Name] = true
			}
		}
	}
	var ids []uint16
	for name := range strings.SplitSeq(s.CipherSuites, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		n := strings.ToUpper(name)
		if rest, ok := strings.CutPrefix(n, "SSL_"); ok {
			n = "TLS_" + rest
		}
		id, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("%w: ssl.cipher.suites: unknown or unsupported suite %q", ErrConfig, name)
		}
		if !tls13[n] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		// Only TLS 1.3 suites: the TLS 1.2 list stays Go's default.
		return nil, nil
	}
	return ids, nil
}
