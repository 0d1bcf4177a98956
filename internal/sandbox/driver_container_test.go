package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Container mode bind-mounts the sandbox's S3 CA where the chart's
// Deployment reads it: the chart's --s3-ca-file names containerS3CA.
func TestTheChartReadsTheS3CAWhereContainerModeMountsIt(t *testing.T) {
	g := NewWithT(t)
	values := DriverValues("example.invalid/driver:1", 8080, 8081, time.Minute, time.Minute)
	withS3CA(values)
	pod, err := DriverPod(values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.Containers[0].Args).To(ContainElement("--s3-ca-file=" + containerS3CA))
}
