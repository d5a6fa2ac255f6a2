package bundle

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	for name, tc := range map[string]struct {
		json string
		want string
	}{
		"valid":         {`{"kubernetesVersion":"v1.36.3","files":[{"name":"bin/kubelet.exe","sha256":"` + sum + `","size":1}]}`, ""},
		"no version":    {`{"files":[]}`, "kubernetesVersion"},
		"escaping name": {`{"kubernetesVersion":"v1","files":[{"name":"../x.exe","sha256":"` + sum + `"}]}`, "must be bin/NAME"},
		"other dir":     {`{"kubernetesVersion":"v1","files":[{"name":"etc/x","sha256":"` + sum + `"}]}`, "must be bin/NAME"},
		"twice":         {`{"kubernetesVersion":"v1","files":[{"name":"a.exe","sha256":"` + sum + `"},{"name":"A.exe","sha256":"` + sum + `"}]}`, "listed twice"},
		"bad sha256":    {`{"kubernetesVersion":"v1","files":[{"name":"a.exe","sha256":"AB"}]}`, "64 lower-case hex"},
		"not json":      {`{`, "reading the bundle manifest"},
	} {
		_, err := Parse([]byte(tc.json))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

func TestDestination(t *testing.T) {
	for name, want := range map[string]string{
		"bin/kubelet.exe":     `C:\Program Files\capwin\bin\kubelet.exe`,
		"cni/win-overlay.exe": `C:\opt\cni\bin\win-overlay.exe`,
		"capwin-node.exe":     `C:\Program Files\capwin\capwin-node.exe`,
	} {
		if got := Destination(name); got != want {
			t.Errorf("%s: got %s, want %s", name, got, want)
		}
	}
}

func TestCheckVersions(t *testing.T) {
	for version, ok := range map[string]bool{"v2.4.2": true, "v2.1.0": true, "2.1.5": true, "v3.0.0": true, "v2.0.9": false, "v1.7.27": false, "": true} {
		err := CheckVersions(&Manifest{Files: []File{{Name: "bin/containerd.exe", Version: version}}})
		if ok != (err == nil) {
			t.Errorf("containerd %q: %v", version, err)
		}
	}
}
