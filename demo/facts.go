package demo

import (
	"maps"
	"slices"
	"sync"
)

// Facts are true, un-noised aggregates of a dataset, computed from the
// generator, for tests that check noisy answers.
type Facts struct {
	Patients int
	Visits   int

	PatientsByRegion  map[string]int
	PatientsBySex     map[string]int
	VisitsByDiagnosis map[string]int
	VisitsByClinic    map[int64]int

	SumAge       int64
	MedianAge    int64 // the lower median of patients' ages
	SumIncome    int64
	SumCostCents int64 // sum of visits.cost, in cents

	// MaxVisitsPerPatient is the largest number of visits of one patient.
	MaxVisitsPerPatient int
	// IncomeOver200k counts patients with income > 200000.
	IncomeOver200k int
	// CostOver2000 counts visits with cost > 2000.00.
	CostOver2000 int
}

// ComputeFacts generates the dataset for opts and aggregates it.
func ComputeFacts(opts GenerateOptions) Facts {
	f := Facts{
		PatientsByRegion:  map[string]int{},
		PatientsBySex:     map[string]int{},
		VisitsByDiagnosis: map[string]int{},
		VisitsByClinic:    map[int64]int{},
	}
	var ages []int64
	for p, visits := range NewDataset(opts).All() {
		ages = append(ages, p.Age)
		f.Patients++
		f.PatientsByRegion[p.Region]++
		f.PatientsBySex[p.Sex]++
		f.SumAge += p.Age
		f.SumIncome += p.Income
		if p.Income > typicalMaxIncome {
			f.IncomeOver200k++
		}
		f.Visits += len(visits)
		f.MaxVisitsPerPatient = max(f.MaxVisitsPerPatient, len(visits))
		for _, v := range visits {
			f.VisitsByDiagnosis[v.Diagnosis]++
			f.VisitsByClinic[v.ClinicID]++
			f.SumCostCents += v.CostCents
			if v.CostCents > typicalMaxCents {
				f.CostOver2000++
			}
		}
	}
	if len(ages) > 0 {
		slices.Sort(ages)
		f.MedianAge = ages[(len(ages)-1)/2]
	}
	return f
}

var defaultFacts = sync.OnceValue(func() Facts { return ComputeFacts(GenerateOptions{}) })

// DefaultFacts returns the facts of the standard dataset (DefaultPatients
// patients). The maps are the caller's own copies.
func DefaultFacts() Facts {
	f := defaultFacts()
	f.PatientsByRegion = maps.Clone(f.PatientsByRegion)
	f.PatientsBySex = maps.Clone(f.PatientsBySex)
	f.VisitsByDiagnosis = maps.Clone(f.VisitsByDiagnosis)
	f.VisitsByClinic = maps.Clone(f.VisitsByClinic)
	return f
}

// Stats returns the row counts of the standard dataset's patients and
// visits tables.
func Stats() (patients int, visits int) {
	f := defaultFacts()
	return f.Patients, f.Visits
}
