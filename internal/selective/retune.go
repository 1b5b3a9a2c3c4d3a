package selective

// Retuned starts a track of the same policy at tolerance eps that keeps
// this track's samples, for a search's next round on the survivors of a
// looser one: a policy.Carrier's kernels start with the samples measured
// so far, so at the tighter tolerance they run only until those and the
// new ones settle them. Nothing decided at the old tolerance carries over
// (which kernels were predictable and shared, agreed on or settled): the
// new track decides again from the samples. A policy that is no Carrier
// starts every run afresh anyway, and gets a fresh track.
func (tr *Track) Retuned(eps float64) *Track {
	nt := NewTrack(tr.pol, eps)
	if !tr.carries {
		return nt
	}
	for k, st := range tr.stats {
		nt.stats[k] = &kstat{key: st.key, hash: st.hash, Stat: st.Stat, alpha: st.alpha}
	}
	return nt
}
