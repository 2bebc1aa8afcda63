package controller

import (
	"testing"
)

func TestOptionsComplete(t *testing.T) {
	o := Options{}
	if err := o.Complete(); err != nil || o.Addons != AddonsSelf || o.Workers <= 0 || o.Coalesce <= 0 || o.WriteParallelism <= 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	bad := Options{Addons: "some"}
	if err := bad.Complete(); err == nil {
		t.Fatal("--addons=some accepted")
	}
}
