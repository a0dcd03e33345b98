package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"agentserver/internal/llm"
)

// TodosChannel is the state channel write_todos replaces.
const TodosChannel = "todos"

// Todo statuses.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// maxTodos bounds the length of a todo list.
const maxTodos = 200

type writeTodos struct{}

// NewWriteTodos returns the write_todos tool. Its result replaces the
// "todos" state channel with the given list of {content, status} maps.
func NewWriteTodos() Tool { return writeTodos{} }

func (writeTodos) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameWriteTodos,
		Description: "Record your plan for a multi-step task as a todo list, and keep it current: " +
			"each call replaces the whole list. Mark an item in_progress when you start it and " +
			"completed as soon as it is done; keep one item in_progress at a time. Skip it for " +
			"simple tasks of one or two steps.",
		Parameters: schema(map[string]any{
			"todos": map[string]any{
				"type":        "array",
				"description": "The complete, updated todo list.",
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"content": prop("string", "What the step is."),
						"status": map[string]any{
							"type":        "string",
							"enum":        []string{TodoPending, TodoInProgress, TodoCompleted},
							"description": "The step's state.",
						},
					},
					"required":             []string{"content", "status"},
					"additionalProperties": false,
				},
			},
		}, "todos"),
	}
}

func (writeTodos) Call(ctx context.Context, call Call) (Result, error) {
	raw, ok := call.Args["todos"]
	if !ok || raw == nil {
		return Result{}, argError("todos", "is required")
	}
	items, ok := raw.([]any)
	if !ok {
		return Result{}, argError("todos", "must be an array of {content, status} objects")
	}
	if len(items) > maxTodos {
		return Result{}, argError("todos", "has %d items; the limit is %d", len(items), maxTodos)
	}
	todos := make([]any, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return Result{}, argError("todos", "item %d must be an object with content and status", i)
		}
		content, ok := m["content"].(string)
		if !ok || content == "" {
			return Result{}, argError("todos", "item %d needs a non-empty string content", i)
		}
		status, _ := m["status"].(string)
		switch status {
		case TodoPending, TodoInProgress, TodoCompleted:
		default:
			return Result{}, argError("todos", "item %d has status %q; use %q, %q or %q",
				i, m["status"], TodoPending, TodoInProgress, TodoCompleted)
		}
		todos = append(todos, map[string]any{"content": content, "status": status})
	}
	list, err := json.Marshal(todos)
	if err != nil {
		return Result{}, fmt.Errorf("encode todos: %w", err)
	}
	return Result{
		Content: "Updated todo list to " + string(list),
		Update:  map[string]any{TodosChannel: todos},
	}, nil
}
