package report

import "strings"

// Where a joining node reports its progress in the cluster it joins: the
// ConfigMap its configuration names (join.progressConfigMap; the bootstrap
// provider uses the Machine's name) in ConfigMapNamespace, key
// ConfigMapKey, whose value is the JSON of a Progress. The management
// cluster reads it through its connection to the workload cluster; no
// cloud API is involved.
const (
	ConfigMapNamespace = "capwin-node-bootstrap"
	ConfigMapKey       = "progress"
)

// TokenGroup is the group a node's bootstrap token carries (among its
// auth-extra-groups) so that RBAC can let it get and patch its own progress
// ConfigMap and no other. The dots of the ConfigMap's name (a DNS-1123
// subdomain) become colons, since a token's extra group may hold only
// [a-z0-9:-] after "system:bootstrappers:". The mapping is injective: a
// DNS name never contains ':', so each group comes from one name only.
func TokenGroup(configMap string) string {
	return "system:bootstrappers:capwin:" + strings.ReplaceAll(configMap, ".", ":")
}
