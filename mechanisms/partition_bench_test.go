package mechanisms

import "testing"

// Partition selection: one Keep decision per group found in the data, with
// the secure source as production uses it.

func benchmarkSelector(b *testing.B, s PartitionSelector) {
	r := Secure()
	units := []int64{1, 5, 20, 50, 200, 5000}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Keep(r, units[i%len(units)]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPartitionSelectionOptimal(b *testing.B) {
	s, err := NewOptimalSelection(0.25, 1e-6, 4)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSelector(b, s)
}

func BenchmarkPartitionSelectionLaplaceThreshold(b *testing.B) {
	s, err := NewLaplaceThreshold(0.25, 1e-6, 4)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSelector(b, s)
}
