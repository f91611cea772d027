package demo

import (
	"maps"
	"slices"
	"sync"
)

// Facts are true, un-noised aggregates of a dataset, computed from the
// generator, for tests that check noisy answers.
type Facts struct {
	Patients      int
	Visits        int
	Prescriptions int

	PatientsByRegion  map[string]int
	PatientsBySex     map[string]int
	VisitsByDiagnosis map[string]int
	VisitsByClinic    map[int64]int
	// PrescriptionsByDrug counts prescriptions per drug, and
	// PrescriptionsByDiagnosis per diagnosis of their visit.
	PrescriptionsByDrug      map[string]int
	PrescriptionsByDiagnosis map[string]int
	// MaxPrescriptionsPerPatient is the most prescriptions of one patient.
	MaxPrescriptionsPerPatient int

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

		PrescriptionsByDrug:      map[string]int{},
		PrescriptionsByDiagnosis: map[string]int{},
	}
	var ages []int64
	var rx []Prescription
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
		perPatient := 0
		for _, v := range visits {
			rx = genPrescriptions(v, 0, rx[:0])
			for _, p := range rx {
				f.PrescriptionsByDrug[p.Drug]++
				f.PrescriptionsByDiagnosis[v.Diagnosis]++
			}
			f.Prescriptions += len(rx)
			perPatient += len(rx)
			f.VisitsByDiagnosis[v.Diagnosis]++
			f.VisitsByClinic[v.ClinicID]++
			f.SumCostCents += v.CostCents
			if v.CostCents > typicalMaxCents {
				f.CostOver2000++
			}
		}
		f.MaxPrescriptionsPerPatient = max(f.MaxPrescriptionsPerPatient, perPatient)
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
	f.PrescriptionsByDrug = maps.Clone(f.PrescriptionsByDrug)
	f.PrescriptionsByDiagnosis = maps.Clone(f.PrescriptionsByDiagnosis)
	return f
}

// Stats returns the row counts of the standard dataset's patients and
// visits tables.
func Stats() (patients int, visits int) {
	f := defaultFacts()
	return f.Patients, f.Visits
}
