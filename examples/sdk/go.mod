module github.com/retryhttp/retryhttp/examples/sdk

go 1.25

require (
	github.com/retryhttp/retryhttp v0.0.0
	github.com/stretchr/testify v1.12.1
	github.com/stripe/stripe-go/v85 v85.0.0
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/retryhttp/retryhttp => ../..
