package main

import "testing"

// A report made again from old results describes the machine they ran
// on, as run.sh recorded it, not the one it is made on.
func TestMachineInfoFromRun(t *testing.T) {
	run := map[string]string{"nproc": "2", "cpu": "AMD EPYC", "memory": "23.5 GiB", "kernel": "6.18.44-fc-v595", "debian": "12.11", "go": "go1.26.8"}
	m := machineInfo(run)
	for k, want := range run {
		if m[k] != want {
			t.Errorf("%s = %q, want the run's %q", k, m[k], want)
		}
	}
	if m := machineInfo(map[string]string{}); m["nproc"] == "" {
		t.Error("results without the machine: this machine's processors not read")
	}
}
