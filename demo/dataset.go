package demo

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Version identifies the generator. Bump it whenever the generated rows
// change: files written by another version are regenerated.
const Version = 2

// DefaultPatients is the number of patients in the standard demo dataset.
const DefaultPatients = 10_000

// NumClinics is the number of clinics (clinic_id 1..NumClinics).
const NumClinics = 25

// MaxVisitsPerPatient bounds the visits of one patient (every patient has
// at least one).
const MaxVisitsPerPatient = 40

// Value ranges of the generated columns.
const (
	MaxAge           = 100
	MaxIncome        = 250_000
	MaxCostCents     = 2_000_000 // 20000.00
	MinCostCents     = 2_000     // 20.00
	typicalMaxCents  = 200_000   // 2000.00: costs above it are the rare outliers
	typicalMaxIncome = 200_000   // incomes above it are the rare outliers
)

// Regions are the values of patients.region, most common first.
var Regions = []string{"central", "north", "south", "east", "west", "coast", "mountain", "islands"}

// regionWeights are the relative frequencies of Regions.
var regionWeights = []float64{22, 18, 16, 14, 12, 9, 6, 3}

// Diagnoses are the values of visits.diagnosis (ICD-10 categories).
var Diagnoses = []string{"J06", "I10", "E11", "M54", "K21", "F32", "J45", "N39", "R51", "L20", "H66", "Z00"}

// diagnosisWeights are the relative frequencies of Diagnoses for adults
// under 60; children and older patients scale them (see diagnosisTables).
var diagnosisWeights = []float64{14, 8, 6, 10, 6, 6, 5, 5, 6, 4, 4, 16}

// diagnosisCost scales the typical cost of a visit by diagnosis.
var diagnosisCost = []float64{0.8, 1.1, 1.3, 1.2, 1.0, 1.5, 0.9, 0.9, 0.8, 0.9, 0.8, 0.6}

// FirstVisitDate and LastVisitDate bound visits.visit_date (inclusive).
var (
	FirstVisitDate = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)
	LastVisitDate  = time.Date(2025, time.December, 31, 0, 0, 0, 0, time.UTC)
)

// visitDays is the number of days from FirstVisitDate to LastVisitDate
// inclusive.
var visitDays = int(LastVisitDate.Sub(FirstVisitDate)/(24*time.Hour)) + 1

// seed is the generator's fixed seed; each patient's rows come from a PCG
// stream keyed by (seed, patient_id), so one patient's rows do not depend
// on how many patients come before it.
const seed uint64 = 0x647070726f787931 // "dpproxy1"

// GenerateOptions scale the dataset.
type GenerateOptions struct {
	// Patients is the number of patients (default DefaultPatients).
	Patients int
	// VisitRate multiplies each patient's mean number of visits (default
	// 1: about 13 visits per patient; the benchmarks use 2, about 21).
	// Visits stay at most MaxVisitsPerPatient.
	VisitRate float64
}

func (o GenerateOptions) withDefaults() GenerateOptions {
	if o.Patients <= 0 {
		o.Patients = DefaultPatients
	}
	if o.VisitRate <= 0 {
		o.VisitRate = 1
	}
	return o
}

// Patient is a row of the patients table.
type Patient struct {
	ID     int64 // 1..Patients
	Age    int64 // 0..MaxAge
	Sex    string
	Region string
	Income int64 // 0..MaxIncome, 0 for children
}

// Visit is a row of the visits table.
type Visit struct {
	ID        int64
	PatientID int64
	ClinicID  int64     // 1..NumClinics
	Date      time.Time // midnight UTC, FirstVisitDate..LastVisitDate
	Diagnosis string
	CostCents int64 // cost in cents: cost = CostCents/100
}

// Prescription is a row of the prescriptions table: a drug prescribed at
// a visit. It belongs to the patient of its visit.
type Prescription struct {
	ID         int64
	VisitID    int64
	Drug       string
	DaysSupply int64 // 5..90
}

// Drugs are the values of prescriptions.drug.
var Drugs = []string{"amoxicillin", "paracetamol", "ibuprofen", "amlodipine", "lisinopril", "metformin", "omeprazole", "sertraline", "salbutamol", "nitrofurantoin", "hydrocortisone", "cetirizine"}

// diagnosisDrugs are the drugs prescribed for each diagnosis (indices
// into Drugs), and chronicDiagnoses those prescribed for months.
var (
	diagnosisDrugs = map[string][]int{
		"J06": {1, 0, 11}, "I10": {3, 4}, "E11": {5}, "M54": {2, 1}, "K21": {6}, "F32": {7},
		"J45": {8, 11}, "N39": {9}, "R51": {1, 2}, "L20": {10, 11}, "H66": {0, 1}, "Z00": {1},
	}
	chronicDiagnoses = map[string]bool{"I10": true, "E11": true, "F32": true, "J45": true}
)

// Cost returns the visit's cost as a decimal with two places ("123.45").
func (v Visit) Cost() string {
	return fmt.Sprintf("%d.%02d", v.CostCents/100, v.CostCents%100)
}

// DateString returns the visit date as 'YYYY-MM-DD'.
func (v Visit) DateString() string { return v.Date.Format(time.DateOnly) }

// Clinic is a row of the clinics table.
type Clinic struct {
	ID   int64
	Name string
	City string
}

// clinicSites are the clinics' cities, names and regions; clinic_id is the
// index plus one.
var clinicSites = []struct{ city, name, region string }{
	{"Midvale", "Midvale General Practice", "central"},
	{"Midvale", "Midvale Family Clinic", "central"},
	{"Crossbridge", "Crossbridge Health Centre", "central"},
	{"Oakford", "Oakford Medical Centre", "central"},
	{"Northam", "Northam Health Centre", "north"},
	{"Northam", "St Brigid's Clinic", "north"},
	{"Frostby", "Frostby Medical Practice", "north"},
	{"Kelda", "Kelda Community Clinic", "north"},
	{"Southport", "Southport Health Centre", "south"},
	{"Southport", "Harbourside Clinic", "south"},
	{"Amberley", "Amberley Surgery", "south"},
	{"Dunmore", "Dunmore Family Practice", "south"},
	{"Easton", "Easton Medical Centre", "east"},
	{"Easton", "Riverside Clinic", "east"},
	{"Marlow", "Marlow Health Centre", "east"},
	{"Westbury", "Westbury Clinic", "west"},
	{"Westbury", "Westbury Children's Clinic", "west"},
	{"Penfold", "Penfold Surgery", "west"},
	{"Saltmarsh", "Saltmarsh Medical Practice", "coast"},
	{"Gullhaven", "Gullhaven Health Centre", "coast"},
	{"Cliffend", "Cliffend Clinic", "coast"},
	{"Highcairn", "Highcairn Mountain Clinic", "mountain"},
	{"Pinehold", "Pinehold Health Post", "mountain"},
	{"Skerray", "Skerray Island Clinic", "islands"},
	{"Tarnholm", "Tarnholm Health Centre", "islands"},
}

// regionClinics lists the clinic ids of each region.
var regionClinics = func() map[string][]int64 {
	m := make(map[string][]int64)
	for i, s := range clinicSites {
		m[s.region] = append(m[s.region], int64(i+1))
	}
	return m
}()

// Dataset generates the demo rows. It holds no rows itself: every
// iteration regenerates them, identically.
type Dataset struct {
	opts GenerateOptions
}

// NewDataset returns the dataset for opts.
func NewDataset(opts GenerateOptions) *Dataset {
	return &Dataset{opts: opts.withDefaults()}
}

// Options returns the dataset's options with defaults filled in.
func (d *Dataset) Options() GenerateOptions { return d.opts }

// Clinics returns the clinics, in clinic_id order.
func (d *Dataset) Clinics() []Clinic {
	out := make([]Clinic, len(clinicSites))
	for i, s := range clinicSites {
		out[i] = Clinic{ID: int64(i + 1), Name: s.name, City: s.city}
	}
	return out
}

// Patients yields the patients in patient_id order.
func (d *Dataset) Patients() iter.Seq[Patient] {
	return func(yield func(Patient) bool) {
		for id := int64(1); id <= int64(d.opts.Patients); id++ {
			p, _ := genPatient(id)
			if !yield(p) {
				return
			}
		}
	}
}

// Visits yields the visits in visit_id order (grouped by patient, by date
// within a patient).
func (d *Dataset) Visits() iter.Seq[Visit] {
	return func(yield func(Visit) bool) {
		for _, visits := range d.All() {
			for _, v := range visits {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// All yields each patient with their visits, in patient_id order. The
// visits slice is reused between iterations.
func (d *Dataset) All() iter.Seq2[Patient, []Visit] {
	return func(yield func(Patient, []Visit) bool) {
		var buf []Visit
		nextID := int64(1)
		for id := int64(1); id <= int64(d.opts.Patients); id++ {
			p, r := genPatient(id)
			buf = genVisits(r, p, d.opts.VisitRate, nextID, buf[:0])
			nextID += int64(len(buf))
			if !yield(p, buf) {
				return
			}
		}
	}
}

// Prescriptions yields the prescriptions in prescription_id order (by
// visit).
func (d *Dataset) Prescriptions() iter.Seq[Prescription] {
	return func(yield func(Prescription) bool) {
		var buf []Prescription
		nextID := int64(1)
		for v := range d.Visits() {
			buf = genPrescriptions(v, nextID, buf[:0])
			nextID += int64(len(buf))
			for _, rx := range buf {
				if !yield(rx) {
					return
				}
			}
		}
	}
}

// genPrescriptions appends the visit's prescriptions, numbered from
// firstID, to buf. Each visit has its own random stream, so the visits
// and patients do not depend on them.
func genPrescriptions(v Visit, firstID int64, buf []Prescription) []Prescription {
	r := rand.New(rand.NewPCG(seed^0x7278, uint64(v.ID)*0x9e3779b97f4a7c15))
	n := 0
	switch u := r.Float64(); {
	case v.Diagnosis == "Z00":
		if u < 0.1 {
			n = 1
		}
	case u < 0.25:
	case u < 0.85:
		n = 1
	default:
		n = 2
	}
	drugs := diagnosisDrugs[v.Diagnosis]
	for i := 0; i < n; i++ {
		days := []int64{5, 7, 10, 14}[r.IntN(4)]
		if chronicDiagnoses[v.Diagnosis] {
			days = 30
			if r.Float64() < 0.3 {
				days = 90
			}
		}
		buf = append(buf, Prescription{ID: firstID + int64(i), VisitID: v.ID, Drug: Drugs[drugs[r.IntN(len(drugs))]], DaysSupply: days})
	}
	return buf
}

// patientRand returns the random stream of one patient.
func patientRand(id int64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(id)*0x9e3779b97f4a7c15))
}

// genPatient draws a patient's attributes. It returns the patient's
// random stream positioned for genVisits.
func genPatient(id int64) (Patient, *rand.Rand) {
	r := patientRand(id)
	p := Patient{ID: id}

	if r.Float64() < 0.2 {
		p.Age = int64(r.IntN(18))
	} else {
		p.Age = int64(clamp(math.Round(48+18*r.NormFloat64()), 18, MaxAge))
	}
	p.Sex = "M"
	if r.Float64() < 0.51 {
		p.Sex = "F"
	}
	p.Region = Regions[pick(r, regionCumulative)]

	u, z, outlier := r.Float64(), r.NormFloat64(), r.Float64()
	switch {
	case p.Age < 18:
		p.Income = 0
	case u < 0.06:
		p.Income = 0 // no income
	case outlier < 0.004:
		p.Income = typicalMaxIncome + 1 + int64(r.IntN(MaxIncome-typicalMaxIncome))
	default:
		median, sigma := 45_000.0, 0.6
		if p.Age >= 67 {
			median, sigma = 28_000, 0.5
		}
		p.Income = int64(clamp(math.Round(median*math.Exp(sigma*z)), 1_000, typicalMaxIncome))
	}
	return p, r
}

// genVisits appends the patient's visits, numbered from firstID, to buf.
func genVisits(r *rand.Rand, p Patient, rate float64, firstID int64, buf []Visit) []Visit {
	mean := (5 + 0.22*float64(p.Age)) * rate
	n := 1 + int(r.ExpFloat64()*mean)
	n = min(n, MaxVisitsPerPatient)

	days := make([]int, n)
	for i := range days {
		days[i] = r.IntN(visitDays)
	}
	slices.Sort(days)

	home := regionClinics[p.Region]
	homeClinic := home[r.IntN(len(home))]
	table := diagnosisTables[ageGroup(p.Age)]

	for i, day := range days {
		clinic := homeClinic
		if r.Float64() >= 0.75 {
			clinic = int64(1 + r.IntN(NumClinics))
		}
		dx := pick(r, table)
		z, outlier := r.NormFloat64(), r.Float64()
		var cents int64
		if outlier < 0.003 {
			cents = typicalMaxCents + 1 + r.Int64N(MaxCostCents-typicalMaxCents)
		} else {
			c := 9_000 * diagnosisCost[dx] * math.Exp(0.85*z)
			cents = int64(clamp(math.Round(c), MinCostCents, typicalMaxCents))
		}
		buf = append(buf, Visit{
			ID:        firstID + int64(i),
			PatientID: p.ID,
			ClinicID:  clinic,
			Date:      FirstVisitDate.AddDate(0, 0, day),
			Diagnosis: Diagnoses[dx],
			CostCents: cents,
		})
	}
	return buf
}

func ageGroup(age int64) int {
	switch {
	case age < 18:
		return 0
	case age < 60:
		return 1
	default:
		return 2
	}
}

var regionCumulative = cumulative(regionWeights)

// diagnosisTables are cumulative diagnosis weights for children, adults
// under 60 and older patients.
var diagnosisTables = func() [3][]float64 {
	child := map[string]float64{"H66": 4, "J06": 2, "J45": 1.5, "I10": 0.05, "E11": 0.1, "M54": 0.2, "F32": 0.3, "K21": 0.3}
	older := map[string]float64{"I10": 3, "E11": 2.5, "M54": 1.5, "H66": 0.2, "J45": 0.7}
	scaled := func(f map[string]float64) []float64 {
		w := slices.Clone(diagnosisWeights)
		for i, code := range Diagnoses {
			if m, ok := f[code]; ok {
				w[i] *= m
			}
		}
		return cumulative(w)
	}
	return [3][]float64{scaled(child), cumulative(diagnosisWeights), scaled(older)}
}()

func cumulative(w []float64) []float64 {
	out := make([]float64, len(w))
	sum := 0.0
	for i, x := range w {
		sum += x
		out[i] = sum
	}
	return out
}

// pick draws an index with probability proportional to its weight, given
// cumulative weights.
func pick(r *rand.Rand, cum []float64) int {
	x := r.Float64() * cum[len(cum)-1]
	for i, c := range cum {
		if x < c {
			return i
		}
	}
	return len(cum) - 1
}

func clamp(x, lo, hi float64) float64 {
	return math.Max(lo, math.Min(hi, x))
}
