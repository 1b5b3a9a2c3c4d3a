package session

import (
	"context"
	"errors"

	"strings"

	"gonum.org/v1/plot"
)

// cmdModel is the 'model' verb (issue 27; being built).
func cmdModel(s *Session, ctx context.Context, c *Command, out Output) error {
	return errors.New("model: not built yet")
}

// modelFigure draws 'plot model' (being built).
func modelFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	return nil, errors.New("plot model: not built yet")
}
