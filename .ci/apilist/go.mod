// The listing of the exported API that .ci/api commits beside apidiff's
// export data. Not published: a module of its own, so that golang.org/x/tools
// stays out of the root module's requirements.
module apilist

go 1.26.0

// The version that golang.org/x/exp/cmd/apidiff, at the version .ci/api
// installs, is built with: the export data apidiff writes is read here.
require golang.org/x/tools v0.52.1-0.20261106145633-d407941a339a

require github.com/stretchr/testify v1.12.1

require go.yaml.in/yaml/v3 v3.0.5 // indirect
