package config

import "testing"

// TestDescriptionsHaveNoStaleEntries: every description in config/reference.go belongs to a key
// or section that exists, so a renamed key cannot leave its old text behind.
func TestDescriptionsHaveNoStaleEntries(t *testing.T) {
	used := map[string]bool{}
	for _, l := range schema.ordered {
		used[l.key] = true
		used[platformPattern(l.key)] = true
	}
	for k := range keyDescriptions {
		if !used[k] {
			t.Errorf("keyDescriptions[%q] describes no key", k)
		}
	}
	for s := range sectionDescriptions {
		// A top-level key that is not a section (profiles) is a section of the reference.
		if !schema.sections[s] && schema.leaves[s] == nil {
			t.Errorf("sectionDescriptions[%q] describes no section", s)
		}
	}
}
