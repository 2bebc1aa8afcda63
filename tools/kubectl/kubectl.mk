# kubectl v1.35.4 for the README test (readmetest), which runs the README's kubectl commands against
# the test hub. Built from the k8s.io/kubernetes module, pinned exactly as tools/kube-apiserver pins
# it (a copy of its go.mod; its dependencies are already downloaded), in a module of its own so that
# adding kubectl's packages never changes tools/kube-apiserver/go.sum and rebuilds bin/kube-apiserver.
# Never taken from the machine: a kubectl on $PATH may be any version. Included from the top-level
# Makefile; paths are relative to the repository root. Built only when missing or when the module
# changes; written to a temporary name first, so an interrupted build never leaves a binary make
# trusts. Stamped with its version as bin/kube-apiserver is (`kubectl version --client`).
bin/kubectl: tools/kubectl/go.mod tools/kubectl/go.sum
	@mkdir -p $(@D)
	cd tools/kubectl && export GOWORK=off && \
	  v=$$(go list -m -f '{{.Version}}' k8s.io/kubernetes) && \
	  major=$${v#v} && major=$${major%%.*} && minor=$${v#v*.} && minor=$${minor%%.*} && \
	  go build -ldflags "-X k8s.io/component-base/version.gitVersion=$$v -X k8s.io/component-base/version.gitMajor=$$major \
	    -X k8s.io/component-base/version.gitMinor=$$minor -X k8s.io/component-base/version.gitTreeState=clean" \
	    -o $(CURDIR)/$@.tmp k8s.io/kubernetes/cmd/kubectl
	mv $@.tmp $@

.PHONY: kubectl
kubectl: bin/kubectl ## Build kubectl (from k8s.io/kubernetes) for the README test.
