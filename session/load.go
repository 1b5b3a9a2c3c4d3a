package session

import (
	"context"
	"errors"
)

// cmdLoad is the 'load' verb (issue 27; being built).
func cmdLoad(s *Session, ctx context.Context, c *Command, out Output) error {
	return errors.New("load: not built yet")
}
