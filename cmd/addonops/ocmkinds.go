package main

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/addonops/addonops/internal/ocmkinds"
)

// missingKinds turns err, a NotFound from reading an OCM object, into ocmkinds' message when what
// is missing is the kind itself (the hub does not serve it): the API server answers both with 404,
// and "add-on not found" would send the user looking for the wrong thing. Otherwise, and when
// discovery cannot tell, it returns nil and the caller reports err as before. It costs a discovery
// request only after a NotFound.
func missingKinds(err error, disc discovery.DiscoveryInterface, host string, kinds []ocmkinds.Kind) error {
	if !apierrors.IsNotFound(err) || disc == nil {
		return nil
	}
	var missing *ocmkinds.MissingError
	if cerr := ocmkinds.Check(disc, host, kinds); errors.As(cerr, &missing) {
		return missing
	}
	return nil
}
