package server

import "net/http"

type responseStore struct{}

func newResponseStore(int, int64) *responseStore                              { return &responseStore{} }
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request)      {}
func (s *Server) handleGetResponse(w http.ResponseWriter, r *http.Request)    {}
func (s *Server) handleDeleteResponse(w http.ResponseWriter, r *http.Request) {}
func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request)       {}
