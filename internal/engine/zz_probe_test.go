package engine

import (
	"testing"

	"github.com/netpol/netpol/internal/synth"
)

func BenchmarkZZRows2k(b *testing.B) {
	e := benchLoad(b, objectsOf(synth.Size2k))
	pods := e.Cluster().Pods
	ports := benchPorts
	for b.Loop() {
		cm := e.ClassMatrix(pods, ports)
		row := make([]bool, cm.Classes()*len(ports))
		for c := range cm.Classes() {
			cm.Row(c, row)
		}
	}
}
