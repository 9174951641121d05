package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
)

// dynamoDBNamespace prefixes DynamoDB's error types on the wire.
const dynamoDBNamespace = "com.amazonaws.dynamodb.v20120810#"

// fakeDynamoDB is a small fake of DynamoDB's JSON API: GetItem and PutItem
// on tables whose key is the string attribute "id". PutItem replaces the
// whole item, and honours the one condition create-if-absent writes use,
// attribute_not_exists(id). Every request must carry a valid SigV4
// signature over the body that arrived.
type fakeDynamoDB struct {
	mu       sync.Mutex
	items    map[string]map[string]json.RawMessage // by table and id
	writes   int                                   // PutItem calls that wrote an item
	rejected int                                   // requests whose signature did not match
}

func newFakeDynamoDB() *fakeDynamoDB {
	return &fakeDynamoDB{items: make(map[string]map[string]json.RawMessage)}
}

// Writes returns how many PutItem calls wrote an item, and how many items
// the fake holds.
func (f *fakeDynamoDB) Writes() (writes, items int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes, len(f.items)
}

// Rejected returns how many requests the fake rejected because their
// signature did not match them.
func (f *fakeDynamoDB) Rejected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rejected
}

// dynamoDBRequest is the part of GetItem's and PutItem's input the fake
// reads.
type dynamoDBRequest struct {
	TableName           string
	Key                 map[string]json.RawMessage
	Item                map[string]json.RawMessage
	ConditionExpression string
}

func (f *fakeDynamoDB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if err := checkSigV4(r, body); err != nil {
		f.mu.Lock()
		f.rejected++
		f.mu.Unlock()
		writeDynamoDBError(w, http.StatusBadRequest, "InvalidSignatureException", err.Error())
		return
	}
	var in dynamoDBRequest
	if r.Method != http.MethodPost || json.Unmarshal(body, &in) != nil {
		writeDynamoDBError(w, http.StatusBadRequest, "SerializationException", "Malformed request.")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Header.Get("X-Amz-Target") {
	case "DynamoDB_20120810.GetItem":
		id := string(in.Key["id"])
		out := map[string]any{}
		if item, ok := f.items[in.TableName+"/"+id]; ok {
			out["Item"] = item
		}
		writeDynamoDBJSON(w, out)
	case "DynamoDB_20120810.PutItem":
		key := in.TableName + "/" + string(in.Item["id"])
		switch strings.ReplaceAll(in.ConditionExpression, " ", "") {
		case "":
		case "attribute_not_exists(id)":
			if _, ok := f.items[key]; ok {
				writeDynamoDBError(w, http.StatusBadRequest, "ConditionalCheckFailedException", "The conditional request failed")
				return
			}
		default:
			writeDynamoDBError(w, http.StatusBadRequest, "ValidationException", "Unsupported condition.")
			return
		}
		f.items[key] = in.Item
		f.writes++
		writeDynamoDBJSON(w, map[string]any{})
	default:
		writeDynamoDBError(w, http.StatusBadRequest, "UnknownOperationException", "Unknown operation.")
	}
}

func writeDynamoDBJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Write(b)
}

// dynamoDBError returns the header and body of a DynamoDB error response:
// the type in X-Amzn-ErrorType and in the body's __type.
func dynamoDBError(typ, message string) (http.Header, string) {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(map[string]string{"__type": dynamoDBNamespace + typ, "message": message})
	return http.Header{
		"Content-Type":     {"application/x-amz-json-1.0"},
		"X-Amzn-Errortype": {dynamoDBNamespace + typ},
	}, b.String()
}

func writeDynamoDBError(w http.ResponseWriter, status int, typ, message string) {
	h, body := dynamoDBError(typ, message)
	for k, v := range h {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	io.WriteString(w, body)
}
