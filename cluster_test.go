package cairn

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateBucketName(t *testing.T) {
	tests := []struct {
		name string
		why  string // part of the refusal; "" = valid
	}{
		{"photos", ""},
		{"my.bucket-2", ""},
		{"abc", ""},
		{strings.Repeat("a", 63), ""},
		{"xn-a", ""},         // only "xn--" is reserved
		{"a-s3aliasx", ""},   // the suffix must end the name
		{"sthree", ""},       // only "sthree-"
		{"ol-s3", ""},        // only "--ol-s3"
		{"bucket.mrap1", ""}, // only the suffix ".mrap"
		{"ab", "3 to 63"},
		{strings.Repeat("a", 64), "3 to 63"},
		{"Photos", "lower-case"},
		{"a_b", "lower-case"},
		{"-ab", "start and end"},
		{"ab.", "start and end"},
		{"a..b", `".."`},
		{"192.168.5.4", "IP address"},
		{"xn--bcher-kva", `"xn--"`},
		{"sthree-bucket", `"sthree-"`},
		{"sthree-configurator", `"sthree-"`},
		{"amzn-s3-demo-bucket", `"amzn-s3-demo-"`},
		{"my-ap-s3alias", `"-s3alias"`},
		{"my-olap--ol-s3", `"--ol-s3"`},
		{"global.mrap", `".mrap"`},
		{"dir--usw2-az1--x-s3", `"--x-s3"`},
		{"tables--table-s3", `"--table-s3"`},
	}
	for _, tc := range tests {
		err := ValidateBucketName(tc.name)
		switch {
		case tc.why == "" && err != nil:
			t.Errorf("%q refused: %v", tc.name, err)
		case tc.why != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.why)):
			t.Errorf("%q: %v, want ErrInvalid saying %s", tc.name, err, tc.why)
		}
	}
}
