// Command reference reads budget schedules (a JSON list) on stdin and writes, for each, what Karpenter makes of
// it (sigs.k8s.io/karpenter pkg/apis/v1/nodepool.go, Budget.IsActive): whether
// cron.ParseStandard("TZ=UTC " + schedule) parses it (robfig/cron v3.0.1, the version Karpenter's go.mod pins),
// and whether the parsed schedule ever comes (Next returns the zero time when it finds no time within five
// years). tests/test_cron_reference.py compares nodefleet/stackfile/cron.py with it.
package main

import (
	"encoding/json"
	"os"
	"time"

	"github.com/robfig/cron/v3"
)

type verdict struct {
	Parses bool   `json:"parses"`
	Never  bool   `json:"never"`
	Error  string `json:"error,omitempty"`
}

func main() {
	var schedules []string
	if err := json.NewDecoder(os.Stdin).Decode(&schedules); err != nil {
		panic(err)
	}
	from := time.Date(2026, time.November, 27, 0, 0, 0, 0, time.UTC)
	out := make([]verdict, 0, len(schedules))
	for _, s := range schedules {
		schedule, err := cron.ParseStandard("TZ=UTC " + s)
		if err != nil {
			out = append(out, verdict{Error: err.Error()})
			continue
		}
		out = append(out, verdict{Parses: true, Never: schedule.Next(from).IsZero()})
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		panic(err)
	}
}
