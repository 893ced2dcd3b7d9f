package signin

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// TestMatchChoicesRevealNothing: over many links, the consent page's three
// choices give the right number away neither by position nor by rank (it is
// first, second and third equally often, and smallest, middle and largest
// equally often), every two-digit number serves as a decoy about equally
// often, and the choices follow the server's key. The key is fixed, so the
// counts are too; the bounds are several standard deviations wide.
func TestMatchChoicesRevealNothing(t *testing.T) {
	s := &Service{hasher: token.NewHasher([]byte("choices test key"))}
	other := &Service{hasher: token.NewHasher([]byte("another key"))}
	const links = 9000
	var position, rank [3]int
	decoys := map[int]int{}
	same := 0
	for i := range links {
		ch := store.Challenge{ID: fmt.Sprintf("ch_%d", i), MatchNumber: minMatch + i%(maxMatch-minMatch+1)}
		got := s.matchChoices(ch)
		sorted := slices.Sorted(slices.Values(got))
		if len(got) != 3 || len(slices.Compact(slices.Clone(sorted))) != 3 || sorted[0] < minMatch || sorted[2] > maxMatch {
			t.Fatalf("matchChoices(%v) = %v; want three distinct two-digit numbers", ch, got)
		}
		if !slices.Equal(s.matchChoices(ch), got) {
			t.Fatalf("matchChoices(%v) changed between calls", ch)
		}
		position[slices.Index(got, ch.MatchNumber)]++
		rank[slices.Index(sorted, ch.MatchNumber)]++
		for _, n := range got {
			if n != ch.MatchNumber {
				decoys[n]++
			}
		}
		if slices.Equal(other.matchChoices(ch), got) {
			same++
		}
	}
	for i := range 3 {
		if position[i] < 2700 || position[i] > 3300 || rank[i] < 2700 || rank[i] > 3300 {
			t.Errorf("the right number by position %v and by rank %v in %d links; want about %d each", position, rank, links, links/3)
			break
		}
	}
	for n := minMatch; n <= maxMatch; n++ {
		if decoys[n] < 120 || decoys[n] > 280 {
			t.Errorf("%d is a decoy %d times in %d links; want about %d", n, decoys[n], links, 2*links/90)
		}
	}
	if same > links/100 {
		t.Errorf("another key gives the same choices for %d of %d links; want them to follow the key", same, links)
	}
}
