package agent

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
)

// metrics are the agent's Prometheus metrics, in a registry of their own
// (plus the Go and process collectors) so that tests can run many agents.
type metrics struct {
	registry *prometheus.Registry
	sync     prometheus.Histogram
	latency  prometheus.Histogram
	chains   prometheus.Gauge
	rules    prometheus.Gauge
	sets     prometheus.Gauge
	elements prometheus.Gauge
	pods     prometheus.Gauge
	invalid  prometheus.Gauge
	// failedClosed: 1 for each invalid admin policy enforced failed closed.
	failedClosed *prometheus.GaugeVec
	refused      prometheus.Gauge
	errors       *prometheus.CounterVec
	cut          prometheus.Counter
	drift        prometheus.Counter
	failing      prometheus.Gauge
}

// Stages of netpol_errors_total.
const (
	stageInput  = "input"  // the input could not be read or is invalid as a whole
	stageKernel = "kernel" // nftables refused the transaction
	stageStatus = "status" // the policies' status could not be written
	stageDNS    = "dns"    // the DNS proxy could not follow a pass
)

func newMetrics() *metrics {
	// Seconds from 1 ms to about 33 s: a relabel in a small cluster and a
	// full sync of a large one both land inside.
	buckets := prometheus.ExponentialBuckets(0.001, 2, 16)
	m := &metrics{
		registry: prometheus.NewRegistry(),
		sync: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "netpol_sync_duration_seconds",
			Help: "Time of one pass that programs a changed input: build, compile, nftables transaction, conntrack cut.", Buckets: buckets}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "netpol_change_to_programmed_seconds",
			Help: "Time from the agent receiving a change of the cluster to the kernel enforcing it.", Buckets: buckets}),
		chains:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_nft_chains", Help: "Chains in the inet netpol table, base chains excluded."}),
		rules:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_nft_rules", Help: "Rules in those chains."}),
		sets:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_nft_sets", Help: "Sets and verdict maps in the inet netpol table."}),
		elements: prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_nft_set_elements", Help: "Elements in those sets and maps."}),
		pods:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_local_pods", Help: "Pods of this node that the agent programs."}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_invalid_objects",
			Help: "Invalid objects: left out of enforcement, or admin policies enforced failed closed (netpol_admin_policy_failed_closed)."}),
		failedClosed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "netpol_admin_policy_failed_closed",
			Help: "1 for each invalid admin policy, enforced in its fail-closed form: its invalid rules deny all traffic, an invalid Allow rule matches nothing. The agent is not ready meanwhile."},
			[]string{"kind", "name"}),
		refused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_policies_refused",
			Help: "NetworkPolicies this node programs as allowing nothing because they are too large; their pods stay isolated."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "netpol_errors_total",
			Help: "Failed passes by stage: input, kernel, status, dns."}, []string{"stage"}),
		cut: prometheus.NewCounter(prometheus.CounterOpts{Name: "netpol_conntrack_entries_cut_total",
			Help: "Conntrack entries deleted because a policy change denies their connection."}),
	}
	m.drift = prometheus.NewCounter(prometheus.CounterOpts{Name: "netpol_nft_drift_repaired_total",
		Help: "Times the agent found its nftables table changed by someone else and programmed it again."})
	m.failing = prometheus.NewGauge(prometheus.GaugeOpts{Name: "netpol_sync_failures_in_a_row",
		Help: "Passes failed since the last good one (0: the kernel enforces the input); retries back off."})
	m.registry.MustRegister(m.sync, m.latency, m.chains, m.rules, m.sets, m.elements, m.pods, m.invalid, m.failedClosed, m.refused, m.errors, m.cut,
		m.drift, m.failing,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, stage := range []string{stageInput, stageKernel, stageStatus, stageDNS} {
		m.errors.WithLabelValues(stage) // export zeros: a rate over a missing series is no answer
	}
	return m
}

// health is what /healthz and /readyz answer from.
type health struct {
	mu      sync.Mutex
	loop    time.Time // last start of a loop iteration
	ready   bool      // some input has been programmed
	failing error     // the last pass failed: the kernel enforces older input
	noDNS   error     // domainNames rules, and no DNS server to learn their addresses from
	// failedClosed: the errors of the admin policies the kernel enforces
	// in their fail-closed form, not as written.
	failedClosed []string
	deadline     time.Duration
}

func (h *health) failed(err error) {
	h.mu.Lock()
	h.failing = err
	h.mu.Unlock()
}

func (h *health) setFailedClosed(why []string) {
	h.mu.Lock()
	h.failedClosed = why
	h.mu.Unlock()
}

func (h *health) tick() {
	h.mu.Lock()
	h.loop = time.Now()
	h.mu.Unlock()
}

func (h *health) programmed() {
	h.mu.Lock()
	h.ready = true
	h.mu.Unlock()
}

// Handler serves /metrics, /healthz (the control loop is turning) and
// /readyz (the kernel enforces the input it was given: until the first pass
// programs, a new pod on this node is not yet isolated as its policies say;
// nor while the input says it is not ready).
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	var gatherer prometheus.Gatherer = a.metrics.registry
	if c, ok := a.cfg.Input.(prometheus.Collector); ok {
		// A registry of the handler's own: a.metrics.registry stays the
		// agent's, whatever the input and however many handlers.
		r := prometheus.NewRegistry()
		if err := r.Register(c); err != nil {
			klog.ErrorS(err, "The input's metrics are not served")
		} else {
			gatherer = prometheus.Gatherers{a.metrics.registry, r}
		}
	}
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		a.health.mu.Lock()
		since := time.Since(a.health.loop)
		started := !a.health.loop.IsZero()
		a.health.mu.Unlock()
		if started && since > a.health.deadline {
			http.Error(w, fmt.Sprintf("the control loop last turned %s ago", since.Round(time.Second)), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if r, ok := a.cfg.Input.(readier); ok {
			if err := r.Ready(); err != nil {
				http.Error(w, "input not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		a.health.mu.Lock()
		ready, failing, noDNS, failedClosed := a.health.ready, a.health.failing, a.health.noDNS, a.health.failedClosed
		a.health.mu.Unlock()
		if !ready {
			http.Error(w, "nothing programmed yet", http.StatusServiceUnavailable)
			return
		}
		if noDNS != nil {
			http.Error(w, noDNS.Error(), http.StatusServiceUnavailable)
			return
		}
		if failing != nil {
			http.Error(w, "the last pass failed, the kernel keeps enforcing the last input programmed: "+failing.Error(),
				http.StatusServiceUnavailable)
			return
		}
		if len(failedClosed) > 0 {
			http.Error(w, "invalid admin policies are enforced failed closed (an invalid rule denies all traffic, an invalid Allow rule matches nothing), not as written:\n"+
				strings.Join(failedClosed, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// statsCollector exports counts of a component (the DNS proxy, the
// recorder) from its Stats, read once a scrape for all of them.
type statsCollector[S any] struct {
	stats   func() S
	metrics []statMetric[S]
}

type statMetric[S any] struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(S) float64
}

func (c *statsCollector[S]) counter(name, help string, v func(S) float64) {
	c.metrics = append(c.metrics, statMetric[S]{prometheus.NewDesc(name, help, nil, nil), prometheus.CounterValue, v})
}

func (c *statsCollector[S]) gauge(name, help string, v func(S) float64) {
	c.metrics = append(c.metrics, statMetric[S]{prometheus.NewDesc(name, help, nil, nil), prometheus.GaugeValue, v})
}

// Describe is part of prometheus.Collector.
func (c *statsCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect is part of prometheus.Collector.
func (c *statsCollector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s))
	}
}
