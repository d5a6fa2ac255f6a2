package agent

import (
	"testing"
	"time"
)

// BenchmarkJoin is the agent's own time in a join on the in-memory host:
// the whole join less the time it waited on the API server, the kubelet
// and flannel (here they answer at once). The budget is 2 s.
func BenchmarkJoin(b *testing.B) {
	var own time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		n := newNode(b)
		b.StartTimer()
		start := time.Now()
		if err := n.join(); err != nil {
			b.Fatal(err)
		}
		total := time.Since(start)
		st, err := LoadState(n.host.FS())
		if err != nil {
			b.Fatal(err)
		}
		var waited time.Duration
		for _, p := range st.Phases {
			waited += p.Waited
		}
		own += total - waited
	}
	perJoin := own / time.Duration(b.N)
	b.ReportMetric(float64(perJoin.Microseconds())/1000, "agent-ms/join")
	if perJoin > 2*time.Second {
		b.Fatalf("the agent's own time in join is %s, over the 2 s budget", perJoin)
	}
}
