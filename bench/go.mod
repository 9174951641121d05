module github.com/retryhttp/retryhttp/bench

go 1.25

require (
	github.com/aws/aws-sdk-go-v2 v1.47.7
	github.com/aws/smithy-go v1.28.8
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/hashicorp/go-cleanhttp v0.5.2
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/redis/go-redis/v9 v9.12.1
	github.com/retryhttp/retryhttp v0.0.0
	github.com/retryhttp/retryhttp/redisbudget v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace (
	github.com/retryhttp/retryhttp => ../
	github.com/retryhttp/retryhttp/redisbudget => ../redisbudget
)
