package printers

import (
	"strconv"
	"strings"
	"time"

	"minik8s/pkg/api"
)

// The volumes' tables, as kubectl prints them (its VOLUMEATTRIBUTESCLASS
// is <unset>: minik8s has no such classes).
func init() {
	tables[api.PersistentVolumesResource.Name] = Columns{
		Headers: []string{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"},
		Wide:    []string{"VOLUMEMODE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			pv := o.(*api.PersistentVolume)
			claim := ""
			if r := pv.Spec.ClaimRef; r != nil {
				claim = r.Namespace + "/" + r.Name
			}
			phase := pv.Status.Phase
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			return []string{pv.Name, pv.Spec.Capacity[api.ResourceStorage], AccessModes(pv.Spec.AccessModes), pv.Spec.PersistentVolumeReclaimPolicy,
					phase, claim, pv.Spec.StorageClassName, "<unset>", pv.Status.Reason, Age(pv.CreationTimestamp, now)},
				[]string{volumeMode(pv.Spec.VolumeMode)}
		},
	}
	tables[api.PersistentVolumeClaimsResource.Name] = Columns{
		Headers: []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
		Wide:    []string{"VOLUMEMODE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			pvc := o.(*api.PersistentVolumeClaim)
			phase := pvc.Status.Phase
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			// The size and modes are the bound volume's.
			capacity, modes := "", ""
			if pvc.Spec.VolumeName != "" {
				capacity, modes = pvc.Status.Capacity[api.ResourceStorage], AccessModes(pvc.Status.AccessModes)
			}
			class := ""
			if pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			}
			return []string{pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, "<unset>", Age(pvc.CreationTimestamp, now)},
				[]string{volumeMode(pvc.Spec.VolumeMode)}
		},
	}
	tables[api.StorageClassesResource.Name] = Columns{
		Headers: []string{"NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"},
		Row: func(o api.Object, now time.Time) ([]string, []string) {
			sc := o.(*api.StorageClass)
			name := sc.Name
			if sc.Annotations[api.AnnotationDefaultStorageClass] == "true" {
				name += " (default)"
			}
			reclaim, mode := api.ReclaimDelete, api.VolumeBindingImmediate
			if sc.ReclaimPolicy != nil {
				reclaim = *sc.ReclaimPolicy
			}
			if sc.VolumeBindingMode != nil {
				mode = *sc.VolumeBindingMode
			}
			expand := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
			return []string{name, sc.Provisioner, reclaim, mode, strconv.FormatBool(expand), Age(sc.CreationTimestamp, now)}, nil
		},
	}
}

// AccessModes are a volume's modes as kubectl abbreviates them, in its
// order.
func AccessModes(modes []string) string {
	var out []string
	for _, m := range []struct{ mode, short string }{
		{"ReadWriteOnce", "RWO"}, {"ReadOnlyMany", "ROX"}, {"ReadWriteMany", "RWX"}, {"ReadWriteOncePod", "RWOP"},
	} {
		for _, have := range modes {
			if have == m.mode {
				out = append(out, m.short)
				break
			}
		}
	}
	return strings.Join(out, ",")
}

func volumeMode(m *string) string {
	if m == nil {
		return "Filesystem"
	}
	return *m
}
