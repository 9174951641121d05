// Package config holds the configurations of the Transport's features: the
// root package reads them, and each feature's package sets them through its
// options, so that neither imports the other for them.
package config
