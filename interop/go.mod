module github.com/retryhttp/retryhttp/interop

go 1.25

replace github.com/retryhttp/retryhttp => ../

require (
	github.com/retryhttp/retryhttp v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
