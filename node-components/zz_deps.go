package deps

import (
	_ "github.com/Microsoft/hnslib/hcn"
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local/backend/disk"
	_ "github.com/pelletier/go-toml/v2"
	_ "golang.org/x/sys/windows/registry"
	_ "golang.org/x/sys/windows/svc/mgr"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/rest"
	_ "k8s.io/cluster-bootstrap/token/jws"
	_ "sigs.k8s.io/yaml"
)
