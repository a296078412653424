package apiserver

import (
	"encoding/json"
	"fmt"

	"k8s.io/client-go/kubernetes/scheme"

	"minik8s/pkg/errdefs"
)

// protobufContentType is how kubectl and client-go send Kubernetes' own
// kinds (kubectl create configmap, kubectl scale): the answers may be
// JSON, which they accept too, but the bodies must be read.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// protobufToJSON reads a protobuf body with Kubernetes' own types, whose
// JSON this server's types share.
func protobufToJSON(data []byte) ([]byte, error) {
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: the protobuf body cannot be read: %v", errdefs.ErrUnsupportedMediaType, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, errdefs.BadRequest("", "the protobuf body cannot be read: %v", err)
	}
	return out, nil
}
