package childproc

import (
	"fmt"
	"net"
)

// FreePorts returns n distinct loopback ports that were free a moment ago, for child processes
// (and test servers) to listen on. They are held open together while they are picked, so the
// kernel cannot return the same port twice; another process may still bind one before the child
// does, which the callers that start processes detect and retry.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreePort is FreePorts(1)'s port.
func FreePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}
