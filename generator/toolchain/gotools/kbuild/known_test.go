package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	goodDoc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  k: v\n"
	badDoc  = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\nbogus: 1\n"
)

func sum(doc string) string {
	s := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(s[:])
}

// A document the caller vouches for is not validated (here one kubeconform refuses, to show it
// was not asked), and is reported valid by its digest; the others are validated as before, the
// valid ones reported by the SHA-256 of their bytes as kubeconform splits the stream (a document
// before a separator without its last newline), the invalid ones not.
func TestKnownDocumentsAreNotValidatedAgain(t *testing.T) {
	v := configMapValidator(t)
	yml := []byte(goodDoc + "---\n" + badDoc)
	good := strings.TrimSuffix(goodDoc, "\n")

	_, problems, valid, err := check("u", yml, &checker{v: v, gates: newKindGates()})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || problems[0].Name != "bad" || problems[0].Status != "statusInvalid" {
		t.Errorf("problems %+v, want bad's alone", problems)
	}
	if !reflect.DeepEqual(valid, []string{sum(good)}) {
		t.Errorf("valid %v, want [%s]", valid, sum(good))
	}

	known := map[[sha256.Size]byte]bool{sha256.Sum256([]byte(badDoc)): true}
	_, problems, valid, err = check("u", yml, &checker{v: v, gates: newKindGates(), known: known})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Errorf("problems %+v, want none: bad's digest was vouched for", problems)
	}
	if !reflect.DeepEqual(valid, []string{sum(good), sum(badDoc)}) {
		t.Errorf("valid %v, want good's then bad's", valid)
	}

	// Without a validator (-validate=false) nothing is said valid.
	_, _, valid, err = check("u", yml, &checker{known: known})
	if err != nil || len(valid) != 0 {
		t.Errorf("valid %v (%v), want none", valid, err)
	}
}

func TestTheKnownFileIsReadOrRefused(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "known")
	if err := os.WriteFile(good, []byte(sum(goodDoc)+"\n"+sum(badDoc)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	known, err := readKnown(good)
	if err != nil || len(known) != 2 || !known[sha256.Sum256([]byte(badDoc))] {
		t.Errorf("known %v (%v), want both digests", known, err)
	}
	if known, err := readKnown(""); err != nil || len(known) != 0 {
		t.Errorf("no file: %v (%v), want an empty set", known, err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte(sum(goodDoc)[:10]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readKnown(bad); err == nil {
		t.Error("a short digest was accepted")
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, []byte(sum(goodDoc)+"00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readKnown(long); err == nil {
		t.Error("a long digest was accepted")
	}
	if _, err := readKnown(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file was accepted")
	}
}
