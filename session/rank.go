package session

import (
	"context"
	"errors"

	"strings"

	"gonum.org/v1/plot"
)

// cmdRank is the 'rank' verb (issue 27; being built).
func cmdRank(s *Session, ctx context.Context, c *Command, out Output) error {
	return errors.New("rank: not built yet")
}

// rankFigure draws 'plot rank' (being built).
func rankFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	return nil, errors.New("plot rank: not built yet")
}
