// SPDX-License-Identifier: MIT
// Target of bench/goroutines.sh: a Go program with N goroutines (default
// 10,000) parked on channels, a mutex and timers, a few busy ones, the
// runtime's own goroutine dump served at /debug/pprof/goroutine, and a
// meter goroutine that records its longest scheduling gap: it sleeps 1 ms
// at a time and keeps the largest lateness (what a pause of the process
// costs a goroutine that wants to run).
//
// Usage: goroutines-target [N]
// Prints "ready <pid> <port>", then on stdin: "reset" zeroes the meter,
// "max" prints the longest lateness since in microseconds.
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

var maxLate int64
var mu sync.Mutex
var sink uint64

func meter() {
	for {
		t := time.Now()
		time.Sleep(time.Millisecond)
		late := int64(time.Since(t) - time.Millisecond)
		for {
			old := atomic.LoadInt64(&maxLate)
			if late <= old || atomic.CompareAndSwapInt64(&maxLate, old, late) {
				break
			}
		}
	}
}

func busy() {
	x := uint64(1)
	for {
		for i := 0; i < 1000000; i++ {
			x = x*6364136223846793005 + 1
		}
		atomic.AddUint64(&sink, x)
		time.Sleep(time.Millisecond)
	}
}

func main() {
	n := 10000
	if len(os.Args) == 2 {
		n, _ = strconv.Atoi(os.Args[1])
	}
	ch := make(chan int)
	mu.Lock()
	for i := 0; i < n; i++ {
		switch i % 4 {
		case 0:
			go func() { <-ch }()
		case 1:
			go func() { mu.Lock() }()
		case 2:
			go func() { time.Sleep(time.Hour) }()
		default:
			go func() {
				select {
				case <-ch:
				case <-time.After(time.Hour):
				}
			}()
		}
	}
	for i := 0; i < 3; i++ {
		go busy()
	}
	go meter()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	go http.Serve(ln, nil)
	fmt.Printf("ready %d %d\n", os.Getpid(), ln.Addr().(*net.TCPAddr).Port)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "reset":
			atomic.StoreInt64(&maxLate, 0)
			fmt.Println("ok")
		case "max":
			fmt.Println(atomic.LoadInt64(&maxLate) / 1000)
		}
	}
}
