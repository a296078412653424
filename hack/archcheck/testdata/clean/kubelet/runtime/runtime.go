package runtime

type Runtime struct{}
