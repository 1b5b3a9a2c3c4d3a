package session

import (
	"context"
	"errors"

	"strings"

	"gonum.org/v1/plot"
)

// cmdAnomalies is the 'anomalies' verb (issue 27; being built).
func cmdAnomalies(s *Session, ctx context.Context, c *Command, out Output) error {
	return errors.New("anomalies: not built yet")
}

// anomaliesFigure draws 'plot anomalies' (being built).
func anomaliesFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	return nil, errors.New("plot anomalies: not built yet")
}
