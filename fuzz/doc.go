// Package fuzz holds sluice's go test -fuzz targets and their seed
// corpora (testdata/fuzz/<Target>). It has no code outside tests; nothing
// imports it.
//
// FuzzRequest drives a real broker over loopback: a valid request header
// for each served API key and version, followed by arbitrary bytes. Run it
// with
//
//	go test -run '^$' -fuzz FuzzRequest -fuzztime 3m ./fuzz/
//
// The seeds (and the checked-in corpus) run as an ordinary test with
// go test ./fuzz/.
package fuzz
