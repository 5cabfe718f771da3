package oracle

import "fmt"

func fmtFloat(x float64) string { return fmt.Sprintf("%.2f", x) }
func sprintInt(i int) string    { return fmt.Sprint(i) }
