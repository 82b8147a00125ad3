package tlsconf

// Server: a listener's TLS configuration, its certificates reloaded when
// their files change (see the package doc), and the principal of a client.

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Options tune a Server; the zero value is the defaults.
type Options struct {
	// ReloadInterval is how often, at most, a handshake reads the keystore
	// and truststore files again to look for a change. Default 10 s;
	// negative: never.
	ReloadInterval time.Duration
	// OnReloadError reports a changed file that did not load (the previous
	// certificates stay in use). Default: nothing reported.
	OnReloadError func(error)
}

// Anonymous is the principal name of a client without a certificate.
const Anonymous = "ANONYMOUS"

// Server is one listener's TLS side. Its methods may be called from any
// goroutine.
type Server struct {
	settings Settings
	o        Options
	mapper   *Mapper

	state     atomic.Pointer[serverState]
	nextCheck atomic.Int64 // UnixNano after which a handshake rereads the files
	reloading sync.Mutex   // held by the handshake that rereads them
}

// serverState is what one generation of the files gives: immutable once
// published.
type serverState struct {
	keystore, truststore []byte // the files' bytes (nil: inline or none)
	cfg                  *tls.Config
}

// NewServer loads s's stores and returns the listener's TLS side. A
// keystore is required; a truststore is needed to verify client
// certificates (without one, the system's roots are used, as Java's
// default truststore would be).
func NewServer(s Settings, o Options) (*Server, error) {
	if !s.HasKeystore() {
		return nil, fmt.Errorf("%w: a TLS listener needs ssl.keystore.location or ssl.keystore.certificate.chain and ssl.keystore.key", ErrConfig)
	}
	if o.ReloadInterval == 0 {
		o.ReloadInterval = 10 * time.Second
	}
	m, err := NewMapper(s.PrincipalMappingRules)
	if err != nil {
		return nil, err
	}
	srv := &Server{settings: s, o: o, mapper: m}
	ks, ts, err := s.readFiles()
	if err != nil {
		return nil, err
	}
	st, err := srv.load(ks, ts)
	if err != nil {
		return nil, err
	}
	srv.state.Store(st)
	srv.nextCheck.Store(time.Now().Add(o.ReloadInterval).UnixNano())
	return srv, nil
}

// readFiles reads the keystore and truststore files, nil for those given
// inline or not at all.
func (s Settings) readFiles() (keystore, truststore []byte, err error) {
	if s.KeystoreLocation != "" {
		if keystore, err = os.ReadFile(s.KeystoreLocation); err != nil {
			return nil, nil, fmt.Errorf("%w: ssl.keystore.location: %v", ErrPEM, err)
		}
	}
	if s.TruststoreLocation != "" {
		if truststore, err = os.ReadFile(s.TruststoreLocation); err != nil {
			return nil, nil, fmt.Errorf("%w: ssl.truststore.location: %v", ErrPEM, err)
		}
	}
	return keystore, truststore, nil
}

// load builds a state from the files' bytes (or the inline values).
func (srv *Server) load(ks, ts []byte) (*serverState, error) {
	s := srv.settings
	if err := s.checkTypes(); err != nil {
		return nil, err
	}
	auth, err := s.clientAuth()
	if err != nil {
		return nil, err
	}
	cfg, err := s.baseConfig()
	if err != nil {
		return nil, err
	}
	cert, err := s.keyPair(ks)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{cert}
	if cfg.ClientCAs, err = s.trustPool(ts); err != nil {
		return nil, err
	}
	switch auth {
	case ClientAuthRequested:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case ClientAuthRequired:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return &serverState{keystore: ks, truststore: ts, cfg: cfg}, nil
}

// baseConfig is the versions and suites of s.
func (s Settings) baseConfig() (*tls.Config, error) {
	lo, hi, err := s.versions()
	if err != nil {
		return nil, err
	}
	suites, err := s.cipherSuites()
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: suites}, nil
}

// keyPair is the keystore's certificate, from ks (the file's bytes) or the
// inline values.
func (s Settings) keyPair(ks []byte) (tls.Certificate, error) {
	if s.KeystoreLocation != "" {
		text := string(ks)
		return keyPair(text, text, s.KeyPassword, "ssl.keystore.location "+s.KeystoreLocation)
	}
	return keyPair(s.KeystoreCertificateChain, s.KeystoreKey, s.KeyPassword, "ssl.keystore.certificate.chain/ssl.keystore.key")
}

// trustPool is the truststore's certificates; nil (the system's roots)
// without one.
func (s Settings) trustPool(ts []byte) (*x509.CertPool, error) {
	var text, where string
	switch {
	case s.TruststoreLocation != "":
		text, where = string(ts), "ssl.truststore.location "+s.TruststoreLocation
	case s.TruststoreCertificates != "":
		text, where = s.TruststoreCertificates, "ssl.truststore.certificates"
	default:
		return nil, nil
	}
	certs, err := parseCertificates(text, where)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

// Config returns the tls.Config to serve with: every handshake takes the
// current state (reloading it first when due).
func (srv *Server) Config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			srv.maybeReload()
			return srv.state.Load().cfg, nil
		},
	}
}

// maybeReload rereads the files if the interval passed and no other
// handshake is doing it.
func (srv *Server) maybeReload() {
	if srv.o.ReloadInterval < 0 || (srv.settings.KeystoreLocation == "" && srv.settings.TruststoreLocation == "") {
		return
	}
	now := time.Now()
	if now.UnixNano() < srv.nextCheck.Load() || !srv.reloading.TryLock() {
		return
	}
	defer srv.reloading.Unlock()
	srv.nextCheck.Store(now.Add(srv.o.ReloadInterval).UnixNano())
	if err := srv.Reload(); err != nil && srv.o.OnReloadError != nil {
		srv.o.OnReloadError(err)
	}
}

// Reload reads the files now and swaps in their state if they changed; on
// an error the previous state stays.
func (srv *Server) Reload() error {
	ks, ts, err := srv.settings.readFiles()
	if err != nil {
		return err
	}
	cur := srv.state.Load()
	if bytes.Equal(ks, cur.keystore) && bytes.Equal(ts, cur.truststore) {
		return nil
	}
	st, err := srv.load(ks, ts)
	if err != nil {
		return err
	}
	srv.state.Store(st)
	return nil
}

// Principal returns the principal name of a client from its connection
// state: its certificate's subject mapped by ssl.principal.mapping.rules,
// or Anonymous without one.
func (srv *Server) Principal(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return Anonymous, nil
	}
	dn, err := SubjectName(cs.PeerCertificates[0])
	if err != nil {
		return "", err
	}
	return srv.mapper.Name(dn)
}

// Certificate returns the leaf certificate currently served (for tests and
// logs).
func (srv *Server) Certificate() *x509.Certificate {
	return srv.state.Load().cfg.Certificates[0].Leaf
}

// ClientConfig returns a client's tls.Config for s: the truststore's
// roots (the system's without one), the keystore's certificate if one is
// configured, and host name verification unless
// ssl.endpoint.identification.algorithm is empty. The caller sets
// ServerName (franz-go sets it to each broker's host).
func ClientConfig(s Settings) (*tls.Config, error) {
	if err := s.checkTypes(); err != nil {
		return nil, err
	}
	cfg, err := s.baseConfig()
	if err != nil {
		return nil, err
	}
	ks, ts, err := s.readFiles()
	if err != nil {
		return nil, err
	}
	if s.HasKeystore() {
		cert, err := s.keyPair(ks)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if cfg.RootCAs, err = s.trustPool(ts); err != nil {
		return nil, err
	}
	identify := "https"
	if s.EndpointIdentification != nil {
		identify = *s.EndpointIdentification
	}
	switch identify {
	case "https", "HTTPS":
	case "":
		// Verify the chain, not the name: Go can only skip both, so the
		// chain is verified here.
		roots := cfg.RootCAs
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("tlsconf: the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		return nil, fmt.Errorf("%w: ssl.endpoint.identification.algorithm=%q: want https or empty", ErrConfig, identify)
	}
	return cfg, nil
}
