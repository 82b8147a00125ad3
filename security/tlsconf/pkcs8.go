package tlsconf

// Encrypted PKCS#8 keys (RFC 5208 EncryptedPrivateKeyInfo) with PBES2
// (RFC 8018): PBKDF2 with HMAC-SHA1/224/256/384/512, then AES-128/192/256-CBC
// or DES-EDE3-CBC with PKCS#7 padding. This is what `openssl pkcs8 -topk8`
// and Java's keytool write; the older PBES1 schemes are refused by name.
//
//	EncryptedPrivateKeyInfo ::= SEQUENCE {
//	    encryptionAlgorithm  AlgorithmIdentifier {PBES2, PBES2-params},
//	    encryptedData        OCTET STRING }
//	PBES2-params ::= SEQUENCE {
//	    keyDerivationFunc  AlgorithmIdentifier {PBKDF2, PBKDF2-params},
//	    encryptionScheme   AlgorithmIdentifier {cipher, IV OCTET STRING} }
//	PBKDF2-params ::= SEQUENCE {
//	    salt OCTET STRING, iterationCount INTEGER,
//	    keyLength INTEGER OPTIONAL, prf AlgorithmIdentifier DEFAULT hmacWithSHA1 }

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"fmt"
	"hash"
)

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	// PBES1 and PKCS#12 schemes, named in the refusal.
	oidPKCS5PBES1  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5}
	oidPKCS12PBE   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1}
	oidHMACSHA1    = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidDESEDE3CBC  = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
	oidAES128CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC   = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	prfByOIDSuffix = map[int]func() hash.Hash{
		7: sha1.New, 8: sha256.New224, 9: sha256.New, 10: sha512.New384, 11: sha512.New,
	}
)

type encryptedPrivateKeyInfo struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Scheme pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// decryptPKCS8 returns the PKCS#8 PrivateKeyInfo inside der.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if rest, err := asn1.Unmarshal(der, &info); err != nil || len(rest) > 0 {
		return nil, fmt.Errorf("%w: not an EncryptedPrivateKeyInfo", ErrPEM)
	}
	algo := info.Algo.Algorithm
	if !algo.Equal(oidPBES2) {
		if len(algo) > len(oidPKCS5PBES1) && (hasPrefix(algo, oidPKCS5PBES1) || hasPrefix(algo, oidPKCS12PBE)) {
			return nil, fmt.Errorf("%w: key encrypted with the legacy scheme %v: only PBES2 is supported (re-encrypt it: openssl pkcs8 -topk8 -v2 aes-256-cbc)", ErrPEM, algo)
		}
		return nil, fmt.Errorf("%w: key encrypted with unknown scheme %v", ErrPEM, algo)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("%w: bad PBES2 parameters: %v", ErrPEM, err)
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("%w: PBES2 key derivation %v: only PBKDF2 is supported", ErrPEM, p.KDF.Algorithm)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kp); err != nil {
		return nil, fmt.Errorf("%w: bad PBKDF2 parameters: %v", ErrPEM, err)
	}
	prf := sha1.New
	if len(kp.PRF.Algorithm) > 0 {
		h, ok := prfByOIDSuffix[kp.PRF.Algorithm[len(kp.PRF.Algorithm)-1]]
		if !ok || !hasPrefix(kp.PRF.Algorithm, oidHMACSHA1[:len(oidHMACSHA1)-1]) {
			return nil, fmt.Errorf("%w: PBKDF2 pseudo-random function %v is not supported", ErrPEM, kp.PRF.Algorithm)
		}
		prf = h
	}
	var (
		keyLen   int
		newBlock func([]byte) (cipher.Block, error)
	)
	switch s := p.Scheme.Algorithm; {
	case s.Equal(oidAES128CBC):
		keyLen, newBlock = 16, aes.NewCipher
	case s.Equal(oidAES192CBC):
		keyLen, newBlock = 24, aes.NewCipher
	case s.Equal(oidAES256CBC):
		keyLen, newBlock = 32, aes.NewCipher
	case s.Equal(oidDESEDE3CBC):
		keyLen, newBlock = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("%w: PBES2 cipher %v is not supported (AES-CBC and DES-EDE3-CBC are)", ErrPEM, s)
	}
	if kp.KeyLength != 0 && kp.KeyLength != keyLen {
		return nil, fmt.Errorf("%w: PBKDF2 key length %d does not fit the cipher", ErrPEM, kp.KeyLength)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Scheme.Parameters.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("%w: bad cipher IV: %v", ErrPEM, err)
	}
	if kp.Iterations < 1 {
		return nil, fmt.Errorf("%w: PBKDF2 iteration count %d", ErrPEM, kp.Iterations)
	}
	key, err := pbkdf2.Key(prf, string(password), kp.Salt, kp.Iterations, keyLen)
	if err != nil {
		return nil, fmt.Errorf("%w: PBKDF2: %v", ErrPEM, err)
	}
	block, err := newBlock(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPEM, err)
	}
	bs := block.BlockSize()
	if len(iv) != bs || len(info.Data) == 0 || len(info.Data)%bs != 0 {
		return nil, fmt.Errorf("%w: encrypted key of %d bytes with an IV of %d", ErrPEM, len(info.Data), len(iv))
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	// PKCS#7 padding; a wrong password almost always breaks it.
	n := int(out[len(out)-1])
	if n == 0 || n > bs {
		return nil, ErrKeyPassword
	}
	for _, c := range out[len(out)-n:] {
		if int(c) != n {
			return nil, ErrKeyPassword
		}
	}
	return out[:len(out)-n], nil
}

func hasPrefix(oid, prefix asn1.ObjectIdentifier) bool {
	return len(oid) >= len(prefix) && oid[:len(prefix)].Equal(prefix)
}
