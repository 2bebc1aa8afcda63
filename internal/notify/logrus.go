package notify

import (
	"io"
	"sync"

	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// routeLibraryLogs sends what notifications-engine logs through logrus to klog, once per process:
// the controller's logs keep one format (--log-format=json too), and the library's per-change Info
// lines ("invalidated cache ...") go to verbosity 4. Warnings and errors (a failed send, a secret
// key the configuration references that the Secret lacks) stay visible.
var routeLibraryLogs = sync.OnceFunc(func() {
	logrus.SetOutput(io.Discard)
	logrus.SetLevel(logrus.DebugLevel)
	logrus.AddHook(klogHook{})
})

type klogHook struct{}

func (klogHook) Levels() []logrus.Level { return logrus.AllLevels }

func (klogHook) Fire(e *logrus.Entry) error {
	logger := klog.Background().WithName("notifications-engine")
	kv := make([]any, 0, 2*len(e.Data))
	for k, v := range e.Data {
		kv = append(kv, k, v)
	}
	switch {
	case e.Level <= logrus.ErrorLevel:
		logger.Error(nil, e.Message, kv...)
	case e.Level == logrus.WarnLevel:
		logger.Info(e.Message, kv...)
	case e.Level == logrus.InfoLevel:
		logger.V(4).Info(e.Message, kv...)
	default:
		logger.V(6).Info(e.Message, kv...)
	}
	return nil
}
