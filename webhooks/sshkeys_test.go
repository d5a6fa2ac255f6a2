package webhooks

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	testKey1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILkF1Ms6BeuCAVt6oFYilabd0bpA5fjYB3Op9jIsDcVi alice1@example.com"
	testKey2 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICgW+26vf/XewPTWdp6YbAqSKtbPe+fopP/RDiIrSZO0 alice2@example.com"
)

func TestValidateSSHAuthorizedKeys(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want string // "" for valid; else a part of the error for entry [1]
	}{
		{"two keys", []string{testKey1, testKey2}, ""},
		{"options and no comment", []string{testKey1, `from="10.0.0.0/8" ` + strings.TrimSuffix(testKey2, " alice2@example.com")}, ""},
		{"not a key", []string{testKey1, "alice@example.com"}, "must be one authorized_keys line"},
		{"a key cut short", []string{testKey1, testKey2[:40]}, "must be one authorized_keys line"},
		{"an unknown type", []string{testKey1, strings.Replace(testKey2, "ssh-ed25519", "ssh-foo", 1)}, "must be one authorized_keys line"},
		{"two keys in one entry", []string{testKey1, testKey1 + "\n" + testKey2}, "holds a line break: give each key its own entry"},
		{"a key and a line after it", []string{testKey1, testKey2 + "\r\nssh-rsa AAAA"}, "holds a line break"},
		{"a private key", []string{testKey1, "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"}, "is a private key"},
		{"a private key without its armour", []string{testKey1, "b3BlbnNzaC1rZXktdjEAAAAA"}, "must be one authorized_keys line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := validateSSHAuthorizedKeys(tt.keys, field.NewPath("spec", "sshAuthorizedKeys"))
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != "spec.sshAuthorizedKeys[1]" || !strings.Contains(errs[0].Error(), tt.want) {
				t.Fatalf("want one error for spec.sshAuthorizedKeys[1] containing %q, got %v", tt.want, errs)
			}
			if strings.Contains(errs[0].Error(), "b3BlbnNzaC1rZXktdjEAAAAA") {
				t.Errorf("the error repeats the private key: %v", errs)
			}
		})
	}
}
