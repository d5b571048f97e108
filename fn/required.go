package fn

import (
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// require asks Crossplane, under name, for the resources sel selects, which it sends in the
// next call's required resources, and returns those this call's request carries under name:
// the answer to the same request on an earlier iteration or reconcile. fetched is false when
// Crossplane has not been asked yet (the first call of a reconcile). Each caller reads what
// it needs of them (as the function reads observed state: observed.go).
func require(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, name string, sel *fnv1.ResourceSelector) (items []*structpb.Struct, fetched bool) {
	if rsp.Requirements == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Resources == nil {
		rsp.Requirements.Resources = map[string]*fnv1.ResourceSelector{}
	}
	rsp.Requirements.Resources[name] = sel
	rr, fetched := req.GetRequiredResources()[name]
	for _, i := range rr.GetItems() {
		items = append(items, i.GetResource())
	}
	return items, fetched
}
