package httpapi

// OpDocIDs lists the operationIds opDocs describes, for opdocs_test.go.
func OpDocIDs() []string {
	ids := make([]string, 0, len(opDocs))
	for id := range opDocs {
		ids = append(ids, id)
	}
	return ids
}
