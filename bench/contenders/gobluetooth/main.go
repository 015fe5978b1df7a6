// SPDX-License-Identifier: MIT

// Benchmark contender: go-bluetooth (Debian golang-github-muka-go-bluetooth-dev)
// service.App, used the way its tests show. rw characteristic: read/write,
// value 00 11 22 33 stored in Properties.Value (go-bluetooth ignores offset).
// Notify characteristic: 4-byte little-endian sequence number set through the
// Properties interface (which emits PropertiesChanged). go-bluetooth's
// StartNotify is a no-op, so the characteristic is re-exported with a wrapper
// whose StartNotify/StopNotify start and stop the ticker:
// BENCH_NOTIFY=timer -> time.Ticker(1 ms), BENCH_NOTIFY=flood -> a tight loop.
package main

import (
	"encoding/binary"
	"log"
	"os"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/muka/go-bluetooth/api/service"
	"github.com/muka/go-bluetooth/bluez/profile/agent"
	"github.com/muka/go-bluetooth/bluez/profile/gatt"
	"github.com/sirupsen/logrus"
)

const (
	svcUUID = "12345678-1234-5678-1234-56789abcdef0"
	rwUUID  = "12345678-1234-5678-1234-56789abcdef1"
	seqUUID = "12345678-1234-5678-1234-56789abcdef2"
)

// notifyingChar wraps a *service.Char with working StartNotify/StopNotify.
type notifyingChar struct {
	*service.Char
	mu   sync.Mutex
	stop chan struct{}
}

func (n *notifyingChar) emit(seq uint32) {
	v := make([]byte, 4)
	binary.LittleEndian.PutUint32(v, seq)
	n.Properties.Value = v
	n.DBusProperties().Instance().Set(gatt.GattCharacteristic1Interface, "Value", dbus.MakeVariant(v))
}

func (n *notifyingChar) StartNotify() *dbus.Error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		return nil
	}
	stop := make(chan struct{})
	n.stop = stop
	flood := os.Getenv("BENCH_NOTIFY") == "flood"
	go func() {
		var seq uint32
		if flood {
			for {
				select {
				case <-stop:
					return
				default:
					n.emit(seq)
					seq++
				}
			}
		}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n.emit(seq)
				seq++
			}
		}
	}()
	return nil
}

func (n *notifyingChar) StopNotify() *dbus.Error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stop != nil {
		close(n.stop)
		n.stop = nil
	}
	return nil
}

func main() {
	logrus.SetLevel(logrus.WarnLevel)
	app, err := service.NewApp(service.AppOptions{AdapterID: "hci0", AgentCaps: agent.CapNoInputNoOutput})
	if err != nil {
		log.Fatal(err)
	}
	svc, err := app.NewService("0000")
	if err != nil {
		log.Fatal(err)
	}
	svc.UUID, svc.Properties.UUID = svcUUID, svcUUID

	rw, err := svc.NewChar("0001")
	if err != nil {
		log.Fatal(err)
	}
	rw.UUID, rw.Properties.UUID = rwUUID, rwUUID
	rw.Properties.Flags = []string{gatt.FlagCharacteristicRead, gatt.FlagCharacteristicWrite}
	rw.Properties.Value = []byte{0x00, 0x11, 0x22, 0x33}
	if err = svc.AddChar(rw); err != nil {
		log.Fatal(err)
	}

	seq, err := svc.NewChar("0002")
	if err != nil {
		log.Fatal(err)
	}
	seq.UUID, seq.Properties.UUID = seqUUID, seqUUID
	seq.Properties.Flags = []string{gatt.FlagCharacteristicNotify}
	seq.Properties.Value = []byte{0, 0, 0, 0}
	if err = svc.AddChar(seq); err != nil {
		log.Fatal(err)
	}
	if err = app.AddService(svc); err != nil {
		log.Fatal(err)
	}
	nc := &notifyingChar{Char: seq}
	if err = app.DBusConn().Export(nc, seq.Path(), gatt.GattCharacteristic1Interface); err != nil {
		log.Fatal(err)
	}
	if err = app.Run(); err != nil {
		log.Fatal(err)
	}
	select {}
}
