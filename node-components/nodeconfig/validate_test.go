package nodeconfig

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func validConfig(t *testing.T) *Config {
	t.Helper()
	data, err := os.ReadFile("testdata/valid.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Parse(data)
	if err != nil {
		t.Fatalf("testdata/valid.json: %v", err)
	}
	return c
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{"other schema version", func(c *Config) { c.SchemaVersion = "capwin.io/node-config/v0" }, "schemaVersion"},
		{"computer name too long", func(c *Config) { c.NodeName = "a-very-long-node-name" }, "nodeName"},
		{"upper-case node name", func(c *Config) { c.NodeName = "WIN1" }, "nodeName"},
		{"no port", func(c *Config) { c.Join.APIServerEndpoint = "10.0.0.1" }, "join.apiServerEndpoint"},
		{"malformed token", func(c *Config) { c.Join.Token = "abc.def" }, "join.token"},
		{"no CA pin", func(c *Config) { c.Join.CACertHashes = nil }, "join.caCertHashes"},
		{"bad CA pin", func(c *Config) { c.Join.CACertHashes = []string{"md5:00"} }, "join.caCertHashes[0]"},
		{"bad taint effect", func(c *Config) { c.Taints[0].Effect = "Sometimes" }, "taints[0].effect"},
		{"bad quantity", func(c *Config) { c.Kubelet.KubeReserved["memory"] = "lots" }, "kubelet.kubeReserved.memory"},
		{"bad isolation", func(c *Config) { c.Containerd.Isolation = "Docker" }, "containerd.isolation"},
		{"bad VNI", func(c *Config) { c.Network.VXLANVNI = 1 }, "network.vxlanVNI"},
		{"bad port", func(c *Config) { c.Network.VXLANPort = 8472 }, "network.vxlanPort"},
		{"IPv6 overlay", func(c *Config) { c.Network.PodCIDRs = []string{"fd00::/56"} }, "network.podCIDRs[0]"},
		{"NAT exception missing", func(c *Config) { c.Network.OutboundNATExceptions = c.Network.OutboundNATExceptions[1:] }, "network.outboundNATExceptions"},
		{"relative file", func(c *Config) { c.Files[0].Path = `a.txt` }, "files[0].path"},
		{"file content not base64", func(c *Config) { c.Files[0].Content = "$(Remove-Item C:\\)" }, "files[0].content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig(t)
			tt.change(c)
			err := c.Validate()
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want Errors naming %s, got %v", tt.field, err)
			}
			for _, fe := range errs {
				if fe.Field == tt.field {
					return
				}
			}
			t.Fatalf("want an error for %s, got %v", tt.field, err)
		})
	}
}

// TestNodeNameIsOptional: without nodeName the node takes its computer name,
// which the agent checks with CheckNodeName, the rule a set nodeName follows.
func TestNodeNameIsOptional(t *testing.T) {
	c := validConfig(t)
	c.NodeName = ""
	if err := c.Validate(); err != nil {
		t.Errorf("a configuration without nodeName: %v", err)
	}
	for name, valid := range map[string]bool{
		"win1-md-q3zk5a":   true,
		"w":                true,
		"WIN1":             false, // the agent lower-cases a computer name first
		"win1-md-q3zk5a-x": false, // 16 characters
		"-win1":            false,
		"win_1":            false,
		"":                 false,
	} {
		err := CheckNodeName(name)
		if (err == nil) != valid {
			t.Errorf("CheckNodeName(%q) = %v, want valid %v", name, err, valid)
		}
		if err != nil && !strings.Contains(err.Error(), NodeNameRule) {
			t.Errorf("CheckNodeName(%q) = %v: the error does not state the rule", name, err)
		}
	}
}

// TestProgressConfigMap: join.progressConfigMap is optional; when set it is
// a DNS-1123 subdomain short enough for its token group.
func TestProgressConfigMap(t *testing.T) {
	for name, valid := range map[string]bool{
		"":                          true, // the node reports nowhere but its disk
		"win1-md-0-7f9c4-x2b8q":     true,
		"win1.md.0":                 true,
		strings.Repeat("a", 248):    true,
		strings.Repeat("a", 249):    false,
		"Win1-md-0":                 false,
		"win1_md":                   false,
		"-win1":                     false,
		"win1.":                     false,
		"win1..md":                  false,
		"system:bootstrappers:x":    false,
		"win1-md-0-7f9c4-x2b8q/etc": false,
	} {
		c := validConfig(t)
		c.Join.ProgressConfigMap = name
		err := c.Validate()
		if (err == nil) != valid {
			t.Errorf("progressConfigMap %q: %v, want valid %v", name, err, valid)
		}
		if err != nil && (!strings.Contains(err.Error(), "join.progressConfigMap") || !strings.Contains(err.Error(), "DNS-1123 subdomain") || !strings.Contains(err.Error(), "248")) {
			t.Errorf("progressConfigMap %q: %v: the error must name the field and the rule", name, err)
		}
	}
}

func TestTokenNeverInErrors(t *testing.T) {
	c := validConfig(t)
	c.Join.Token = "abcdef.0123456789ABCDEF" // upper case: invalid
	err := c.Validate()
	if err == nil || strings.Contains(err.Error(), "0123456789ABCDEF") {
		t.Fatalf("the error must reject the token without echoing it: %v", err)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	data, _ := os.ReadFile("testdata/valid.json")
	withTypo := strings.Replace(string(data), `"nodeName"`, `"nodeNmae"`, 1)
	if _, err := Parse([]byte(withTypo)); err == nil || !strings.Contains(err.Error(), "unknown field") {
		t.Fatalf("an unknown field must be refused, got %v", err)
	}
	if _, err := Parse(append(data, []byte(`{}`)...)); err == nil {
		t.Fatal("data after the object must be refused")
	}
}

func TestSecretsNotEchoed(t *testing.T) {
	c := validConfig(t)
	c.Proxy = &Proxy{HTTPProxy: "proxy.example.com:3128?user=alice&password=hunter2"}
	c.Containerd.RegistryMirrors = []RegistryMirror{{Registry: "docker.io", Endpoints: []string{"ftp://alice:hunter2@mirror.example.com/v2?sig=SECRETSIG"}}}
	err := c.Validate()
	if err == nil {
		t.Fatal("want errors for the proxy and the mirror's URL")
	}
	for _, secret := range []string{"hunter2", "SECRETSIG"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error echoes %q: %v", secret, err)
		}
	}
}
