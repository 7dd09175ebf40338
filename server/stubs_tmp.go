package server

import "net/http"

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {}
