//go:build !unix

package engine

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this system") }
